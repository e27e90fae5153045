import type { Logger } from '@nestjs/common';
import { Abortable } from '../abortable.js';
import type { RedisClient } from '../redis/connection.js';

/** A reply entry's fields as read, `[name, value, …]`: strings, or Buffers when read as bytes. */
export type ReplyEntry = readonly (string | Buffer)[];

type XReadReply = [stream: string | Buffer, entries: [id: string | Buffer, fields: (string | Buffer)[]][]][] | null;

const READ_COUNT = 100;
const BLOCK_MS = 5_000;
const MAX_BACKOFF_MS = 2_000;
/** Read replies are trimmed off once this many were read, or DELETE_AFTER_MS after a read, whichever comes first. */
const DELETE_BATCH = 100;
const DELETE_AFTER_MS = 500;

/**
 * Reads this client's private reply stream with one blocking XREAD on a dedicated connection.
 * The stream has a single reader, so no consumer group: it reads from `0-0` (no entry can be
 * missed, even one written before the first read) and then from the last id seen. Read
 * entries are removed by this client, never before it read them: the server does not trim
 * replies to a small size (it would drop those of a client that is slow to read). Off the reply
 * path, one `XTRIM MINID` per DELETE_BATCH replies or DELETE_AFTER_MS removes every entry up to
 * the last one read (reads go by id, so a read entry not yet removed is never read again; a
 * failed trim is caught up by the next one). A periodic PEXPIRE keeps the stream alive only
 * while this client lives. `asBytes` reads the entries as Buffers (XREAD through ioredis'
 * `xreadBuffer`), for replies that are not text.
 */
export class ReplyListener {
  private lastId = '0-0';
  private stopped = false;
  private loop: Promise<void> | undefined;
  private keepAlive: NodeJS.Timeout | undefined;
  /** Entries read since the last trim. */
  private untrimmed = 0;
  private deleteTimer: NodeJS.Timeout | undefined;
  /** The read or backoff in progress; aborted by stop() (ioredis may never settle that read). */
  private readonly inFlight = new Abortable();
  constructor(
    private readonly reader: RedisClient,
    private readonly commands: RedisClient,
    readonly key: string,
    private readonly ttlMs: number,
    private readonly asBytes: boolean,
    private readonly onReply: (fields: ReplyEntry, entryId: string) => void,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (this.loop) return;
    this.loop = this.run();
    this.keepAlive = setInterval(() => this.renew(), Math.max(1, Math.floor(this.ttlMs / 3)));
    this.keepAlive.unref();
  }

  /** Stops reading; the caller closes the reader connection, which ends a pending XREAD. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.inFlight.abort(new Error('reply listener stopped'));
    clearInterval(this.keepAlive);
    clearTimeout(this.deleteTimer);
    this.reader.disconnect(false);
    await this.loop;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        const args = ['COUNT', READ_COUNT, 'BLOCK', BLOCK_MS, 'STREAMS', this.key, this.lastId] as const;
        const read: Promise<unknown> = this.asBytes ? this.reader.xreadBuffer(...args) : this.reader.xread(...args);
        const reply = (await this.inFlight.wrap(read)) as XReadReply;
        if (this.stopped) return;
        failures = 0;
        if (reply) {
          this.handle(reply);
          // The requests these replies trigger (a caller sending its next one) go out first.
          await afterThisTurn();
        }
      } catch (error) {
        if (this.stopped) return;
        failures++;
        if (failures === 1) this.logger.warn(`Reading replies from "${this.key}" failed: ${(error as Error).message}; retrying`);
        const backoff = new Promise<void>((resolve) => setTimeout(resolve, Math.min(MAX_BACKOFF_MS, 50 * 2 ** failures)).unref());
        await this.inFlight.wrap(backoff).catch(() => undefined);
      }
    }
  }

  private handle(reply: NonNullable<XReadReply>): void {
    for (const [, entries] of reply) {
      for (const [read, flat] of entries) {
        const id = typeof read === 'string' ? read : read.toString();
        this.lastId = id;
        this.untrimmed++;
        try {
          this.onReply(flat, id);
        } catch (error) {
          this.logger.error(`Reply ${id} on "${this.key}" could not be routed: ${(error as Error).message}`);
        }
      }
    }
    if (this.untrimmed >= DELETE_BATCH) this.trimRead();
    else if (this.untrimmed > 0 && this.deleteTimer === undefined) {
      this.deleteTimer = setTimeout(() => this.trimRead(), DELETE_AFTER_MS);
      this.deleteTimer.unref();
    }
  }

  /** Removes every entry up to the last one read (the single reader reads in id order). */
  private trimRead(): void {
    clearTimeout(this.deleteTimer);
    this.deleteTimer = undefined;
    if (this.stopped || this.untrimmed === 0) return;
    this.untrimmed = 0;
    this.commands.xtrim(this.key, 'MINID', idAfter(this.lastId)).catch((error: unknown) => {
      this.logger.warn(`XTRIM of read replies on "${this.key}" failed: ${(error as Error).message}`);
    });
  }

  private renew(): void {
    this.commands.pexpire(this.key, this.ttlMs).catch(() => undefined);
  }
}

/** The smallest stream id above `id` (`MINID` keeps entries at or above it). */
function idAfter(id: string): string {
  const [ms = '0', seq = '0'] = id.split('-');
  const next = BigInt(seq) + 1n;
  return next > 0xffff_ffff_ffff_ffffn ? `${BigInt(ms) + 1n}-0` : `${ms}-${next}`;
}

function afterThisTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
