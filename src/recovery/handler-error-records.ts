import { companionKey } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { withTimeout } from '../timeout.js';

/**
 * The handler's own error of a failed entry, kept in Redis next to the entry so that whichever
 * worker dead-letters it (another process, or this one after a restart) can say why it failed:
 * one string key per entry, `{orders}:error:<group>:<id>` (in the stream's hash slot), holding
 * `Class: message`, overwritten by each failure and expiring `minIdleTime` + 1 h after the last.
 * The dead-lettering worker reads them with one MGET and deletes the ones it used.
 */
export const HANDLER_ERROR_RETENTION_MS = 3_600_000;

export function handlerErrorKey(stream: string, group: string, id: string): string {
  return companionKey(stream, `error:${group}:${id}`);
}

/** What the records report to: the first failure of each kind only (a missing ACL rule would else log on every entry). */
export type RecordFailureReport = (what: 'write' | 'read' | 'delete', error: Error) => void;

/** Writes, reads and deletes the error records of one server. */
export class HandlerErrorRecords {
  /** Writes in flight: `close()` waits for them before the connection goes, within its bound. */
  private readonly writes = new Set<Promise<void>>();
  private readonly reported = new Set<string>();
  /** stop() ran: the connection closes; nothing is written or reported any more. */
  private stopped = false;

  constructor(private readonly report: RecordFailureReport) {}

  /** Records `text` for the entry (fire and forget; a failure is reported once and the memory fallback stays). */
  write(redis: RedisClient, stream: string, group: string, id: string, text: string, minIdleTime: number): void {
    if (this.stopped) return;
    const write = redis
      .set(handlerErrorKey(stream, group, id), text, 'PX', minIdleTime + HANDLER_ERROR_RETENTION_MS)
      .then(
        () => undefined,
        (error: unknown) => this.reportOnce('write', error),
      )
      .finally(() => this.writes.delete(write));
    this.writes.add(write);
  }

  /** The recorded errors of `ids` (one MGET: the keys share the stream's slot), by id; none when the read fails. */
  async read(redis: RedisClient, stream: string, group: string, ids: readonly string[]): Promise<Record<string, string>> {
    const errors: Record<string, string> = {};
    if (ids.length === 0) return errors;
    let values: (string | null)[];
    try {
      values = await redis.mget(...ids.map((id) => handlerErrorKey(stream, group, id)));
    } catch (error) {
      this.reportOnce('read', error);
      return errors;
    }
    ids.forEach((id, i) => {
      const value = values[i];
      if (typeof value === 'string') errors[id] = value;
    });
    return errors;
  }

  /** Deletes the records of `ids` (dead-lettered: no longer needed); a failure leaves them to their TTL. */
  async delete(redis: RedisClient, stream: string, group: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    try {
      await redis.del(...ids.map((id) => handlerErrorKey(stream, group, id)));
    } catch (error) {
      this.reportOnce('delete', error);
    }
  }

  /**
   * Waits for the writes in flight up to `waitMs` (what close() has left to wait on Redis), then
   * stops: a write given up on ends on the closed connection, unreported (the memory fallback and
   * the retry records still say why the entry failed, on this worker).
   */
  async stop(waitMs: number): Promise<void> {
    try {
      await withTimeout(this.settled(), waitMs, 'handler error records');
    } catch {
      // given up on: see above
    } finally {
      this.stopped = true;
    }
  }

  private async settled(): Promise<void> {
    while (this.writes.size > 0) await Promise.all(this.writes);
  }

  private reportOnce(what: 'write' | 'read' | 'delete', error: unknown): void {
    if (this.stopped || this.reported.has(what)) return;
    this.reported.add(what);
    this.report(what, error instanceof Error ? error : new Error(String(error)));
  }
}
