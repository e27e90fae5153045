import { RedisStreamsOptionError } from '../../errors.js';
import { describe, integerOption, timerMillisOption } from '../../validation.js';

/**
 * `extras.batch` of an `@EventPattern`: the handler is called once with an array of payloads when
 * `size` entries are there, or `waitMs` after the first of them arrived (docs/batch.md).
 */
export interface BatchOption {
  /** Most entries per handler call (at most the server's `prefetch`). */
  size: number;
  /** How long the first entry of a batch waits for more before the batch runs smaller. Default 20 ms; 0: never wait. */
  waitMs?: number;
}

export interface ResolvedBatch {
  readonly size: number;
  readonly waitMs: number;
}

export const DEFAULT_BATCH_WAIT_MS = 20;

/** What a batch option is checked against: the server's prefetch and the handler's other extras. */
export interface BatchOptionContext {
  readonly prefetch: number;
  readonly ackMode: 'auto' | 'manual';
  readonly idempotency: boolean;
}

/** `extras.batch`, validated; `undefined` when off. `option` names it in errors (`extras.batch (handler "x")`). */
export function resolveBatchOption(option: string, value: unknown, context: BatchOptionContext): ResolvedBatch | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError(option, `must be { size, waitMs? }, got ${describe(value)}`);
  }
  const { size, waitMs, ...rest } = value as { size?: unknown; waitMs?: unknown };
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new RedisStreamsOptionError(`${option}.${unknown}`, 'is not a batch option (size, waitMs)');
  if (size === undefined) throw new RedisStreamsOptionError(`${option}.size`, 'is required (the most entries per handler call)');
  const resolvedSize = integerOption(`${option}.size`, size, 0, 1);
  // A batch larger than prefetch could never fill: every batch would wait waitMs for nothing.
  if (resolvedSize > context.prefetch) {
    throw new RedisStreamsOptionError(`${option}.size`, `must be at most the server's prefetch (${context.prefetch}), got ${resolvedSize}`);
  }
  if (context.ackMode === 'manual') {
    throw new RedisStreamsOptionError(
      option,
      'cannot be used with ackMode "manual": a batch is settled by its outcome (mark failed entries with ctx.fail); give the handler ackMode: "auto"',
    );
  }
  if (context.idempotency) {
    throw new RedisStreamsOptionError(option, 'cannot be combined with extras.idempotency (not supported for batch handlers)');
  }
  return { size: resolvedSize, waitMs: timerMillisOption(`${option}.waitMs`, waitMs, DEFAULT_BATCH_WAIT_MS, 0) };
}
