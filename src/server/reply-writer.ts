import { encodeReplyArgs, type ReplyPacket } from '../codec/reply.js';
import type { RedisClient } from '../redis/connection.js';
import { batchThisTick } from '../redis/tick-batching.js';

export interface ReplyLimits {
  readonly maxLen: number;
  readonly ttlMs: number;
}

/** Above this many remembered reply streams, stale ones are swept on the next refresh. */
const SWEEP_ABOVE = 1_000;

/**
 * Writes replies to requesters' reply streams. A reply stream must never outlive its client by
 * more than its TTL, so a write that may create the stream goes with its PEXPIRE in one MULTI.
 * That MULTI is needed only once per `ttl / 3` per stream: in between, a reply is one plain
 * `XADD … NOMKSTREAM` (the stream exists and carries a TTL that the client, and every third of
 * a TTL this writer, renews). When that XADD finds no stream (client closed, or the key was lost),
 * the reply falls back to the MULTI, so a recreated stream always expires again.
 */
export class ReplyWriter {
  /** Reply stream → when this writer last set its expiry (ms, monotonic). */
  private readonly refreshedAt = new Map<string, number>();

  constructor(
    private readonly client: () => RedisClient,
    private readonly limits: ReplyLimits,
  ) {}

  async write(replyTo: string, correlationId: string, packet: ReplyPacket): Promise<void> {
    const args = encodeReplyArgs(correlationId, packet);
    const { maxLen, ttlMs } = this.limits;
    const now = performance.now();
    const last = this.refreshedAt.get(replyTo);
    const client = this.client();
    // The replies of one tick (plain XADDs and MULTIs alike) leave in one socket write.
    batchThisTick(client);
    if (last !== undefined && now - last < ttlMs / 3) {
      const id = await client.xadd(replyTo, 'NOMKSTREAM', 'MAXLEN', '~', maxLen, '*', ...args);
      if (id !== null) return;
      this.refreshedAt.delete(replyTo);
    }
    await writeWithExpiry(client, replyTo, [args], this.limits);
    this.remember(replyTo, now);
  }

  /**
   * Several replies of one request (a streamed reply), in order, in one MULTI: XADD each + PEXPIRE.
   * Plain pipelined XADDs could reorder them: one that finds the stream gone falls back to a MULTI
   * written after the XADDs behind it. One entry goes the way of `write()`.
   */
  async writeAll(replyTo: string, correlationId: string, packets: readonly ReplyPacket[]): Promise<void> {
    if (packets.length === 1) return this.write(replyTo, correlationId, packets[0] as ReplyPacket);
    const client = this.client();
    batchThisTick(client);
    const now = performance.now();
    await writeWithExpiry(
      client,
      replyTo,
      packets.map((packet) => encodeReplyArgs(correlationId, packet)),
      this.limits,
    );
    this.remember(replyTo, now);
  }

  private remember(replyTo: string, now: number): void {
    if (this.refreshedAt.size >= SWEEP_ABOVE) {
      const staleBefore = now - this.limits.ttlMs / 3;
      for (const [key, at] of this.refreshedAt) if (at < staleBefore) this.refreshedAt.delete(key);
    }
    this.refreshedAt.set(replyTo, now);
  }
}

/** XADDs (the first may create the stream) and PEXPIRE in one MULTI: a created stream always has a TTL. */
async function writeWithExpiry(client: RedisClient, replyTo: string, entries: readonly (string | Buffer)[][], limits: ReplyLimits): Promise<void> {
  const multi = client.multi();
  for (const args of entries) multi.xadd(replyTo, 'MAXLEN', '~', limits.maxLen, '*', ...args);
  const results = await multi.pexpire(replyTo, limits.ttlMs).exec();
  if (results === null || results === undefined) throw new Error(`reply to "${replyTo}" was discarded (MULTI aborted)`);
  const failed = results.find(([error]) => error !== null);
  if (failed) throw failed[0] as Error;
}
