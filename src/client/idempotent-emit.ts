import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { durationMillisOption } from '../duration.js';
import { RedisStreamsCapabilityError, RedisStreamsOptionError } from '../errors.js';
import { describe, integerOption } from '../validation.js';
import { ConnectionClosedError } from './connection-closed.js';

/**
 * Retry-safe producing with Redis 8.6's IDMP (`XADD … IDMP <producer> <key>` / `IDMPAUTO <producer>`):
 * Redis remembers each producer's recent keys and answers a repeated XADD with the original id
 * instead of adding the entry again, so a failed or timed-out emit can be sent again safely.
 */
export interface IdempotenceOptions {
  /**
   * This client's producer id. Keys are scoped per producer: set it (e.g. the pod name) to keep it
   * stable across restarts, so a retry after a restart is recognised too. Default: a random UUID per
   * client instance.
   */
  producerId?: string;
  /** Emits without an `idempotencyKey` get `IDMPAUTO` (the key is a hash of the entry's fields). Default true. */
  auto?: boolean;
  /** How many times a failed or timed-out emit is sent again with the same key. Default 3. */
  retries?: number;
  /** Wait before each retry: ms or ISO-8601. Default 500 ms. */
  retryDelay?: number | string;
}

export interface ResolvedIdempotence {
  readonly auto: boolean;
  readonly retries: number;
  readonly retryDelayMs: number;
}

/** What IDMP needs from the server; 8.6.2 fixed several IDMP bugs, so 8.6.2 is the floor to run it on. */
export const IDMP_REQUIREMENT = { capability: 'idmp', since: '8.6', feature: 'XADD … IDMP / IDMPAUTO' } as const;

export function resolveIdempotence(value: unknown): { producerId: string | undefined; idempotence: ResolvedIdempotence | undefined } {
  if (value === undefined || value === false) return { producerId: undefined, idempotence: undefined };
  if (value === true) return { producerId: undefined, idempotence: { auto: true, retries: 3, retryDelayMs: 500 } };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError('idempotence', `must be true, false or { producerId?, auto?, retries?, retryDelay? }, got ${describe(value)}`);
  }
  const { producerId, auto, retries, retryDelay, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new RedisStreamsOptionError(`idempotence.${unknown}`, 'is not an idempotence option (producerId, auto, retries, retryDelay)');
  if (producerId !== undefined && (typeof producerId !== 'string' || producerId === '')) {
    throw new RedisStreamsOptionError('idempotence.producerId', `must be a non-empty string, got ${describe(producerId)}`);
  }
  if (auto !== undefined && typeof auto !== 'boolean') throw new RedisStreamsOptionError('idempotence.auto', `must be true or false, got ${describe(auto)}`);
  return {
    producerId: producerId as string | undefined,
    idempotence: {
      auto: auto !== false,
      retries: integerOption('idempotence.retries', retries, 3, 0, 100),
      retryDelayMs: retryDelay === undefined ? 500 : durationMillisOption('idempotence.retryDelay', retryDelay),
    },
  };
}

export function newProducerId(): string {
  return randomUUID();
}

/**
 * The IDMP words of one emit (`[]` when it has none). Whether the server has IDMP is judged when
 * the XADD is sent (each attempt, see xadd-writer.ts): a per-call key on a server without it is a
 * named error for that emit, never an XADD written without its key.
 */
export function idmpArgs(producerId: string, idempotence: ResolvedIdempotence | undefined, idempotencyKey: string | undefined): string[] {
  if (idempotencyKey === undefined) return idempotence?.auto === true ? ['IDMPAUTO', producerId] : [];
  if (typeof idempotencyKey !== 'string' || idempotencyKey === '') {
    throw new RedisStreamsOptionError('idempotencyKey', `must be a non-empty string, got ${describe(idempotencyKey)}`);
  }
  return ['IDMP', producerId, idempotencyKey];
}

/** The error of an XADD carrying `word` on a server without IDMP, naming what asked for it. */
export function idmpUnsupported(word: IdmpWord): RedisStreamsCapabilityError {
  return new RedisStreamsCapabilityError(
    word === 'IDMP' ? 'idempotencyKey' : 'idempotence',
    IDMP_REQUIREMENT.capability,
    IDMP_REQUIREMENT.since,
    IDMP_REQUIREMENT.feature,
  );
}

/**
 * Sends an XADD carrying IDMP, and sends it again (same arguments, so the same key) after a
 * failure that may or may not have written it: a timeout, a connection that was not ready or
 * closed. A reply error (the server refused it), a capability error (the server it failed over
 * to lacks IDMP) and the client's `close()` are final: `lifetime` (aborted by close()) ends the
 * wait for a retry at once, and the wait never keeps the process alive. Redis deduplicates
 * within its IDMP-DURATION (100 s by default): keep `retries × (commandTimeout + retryDelay)`
 * well below it.
 */
export async function sendWithRetries<T>(
  send: () => Promise<T>,
  retries: number,
  retryDelayMs: number,
  lifetime: AbortSignal,
  /** Failures that no retry can change (default: see above). */
  isFinal: (error: unknown) => boolean = isFinalFailure,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await send();
    } catch (error) {
      if (attempt >= retries || isFinal(error)) throw error;
      try {
        await sleep(retryDelayMs, undefined, { signal: lifetime, ref: false });
      } catch {
        throw new ConnectionClosedError();
      }
    }
  }
}

export function isFinalFailure(error: unknown): boolean {
  return (error as Error).name === 'ReplyError' || error instanceof RedisStreamsCapabilityError || error instanceof ConnectionClosedError;
}

export type IdmpWord = 'IDMP' | 'IDMPAUTO';

/** The IDMP or IDMPAUTO word of XADD arguments (it sits right after the key and NOMKSTREAM), if any. */
export function idmpWordOf(args: readonly unknown[]): IdmpWord | undefined {
  const word = args[1] === 'NOMKSTREAM' ? args[2] : args[1];
  return word === 'IDMP' || word === 'IDMPAUTO' ? word : undefined;
}
