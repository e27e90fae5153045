import type { ArgumentsHost } from '@nestjs/common';
import { BaseRpcExceptionFilter } from '@nestjs/microservices';

/**
 * Method of a `RedisStreamsContext` that remembers the error its handler threw. A registered
 * symbol, so every copy of this package installed in one app recognizes the others' contexts.
 */
export const RECORD_HANDLER_ERROR = Symbol.for('nestjs-redis-streams:record-handler-error');

const INSTALLED = Symbol.for('nestjs-redis-streams:handler-error-capture');

interface ErrorRecorder {
  [RECORD_HANDLER_ERROR](error: unknown): void;
}

/**
 * Nest's RPC exception filter turns a plain `Error` into `{ status: 'error', message: 'Internal
 * server error' }` before the handler's promise settles, so the server only ever sees that. The
 * filter is handed the handler's arguments (`[data, ctx]`): wrapped once per process, it tells our
 * context the original error first, then does exactly what it did. Nothing changes for other
 * transports (their context is no RedisStreamsContext), nor for what a requester receives.
 */
export function captureHandlerErrors(): void {
  const prototype = BaseRpcExceptionFilter.prototype as unknown as Record<PropertyKey, unknown> & {
    catch(exception: unknown, host: ArgumentsHost): unknown;
  };
  if (prototype[INSTALLED] === true) return;
  const original = prototype.catch;
  prototype.catch = function catchRecordingHandlerError(this: unknown, exception: unknown, host: ArgumentsHost) {
    const context = host?.getArgs?.()[1] as Partial<ErrorRecorder> | undefined;
    if (context !== null && typeof context === 'object' && typeof context[RECORD_HANDLER_ERROR] === 'function') {
      context[RECORD_HANDLER_ERROR](exception);
    }
    return original.call(this, exception, host);
  };
  prototype[INSTALLED] = true;
}
