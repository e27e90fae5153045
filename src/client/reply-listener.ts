import type { Logger } from '@nestjs/common';
import { fieldsFromArray, type StreamFields } from '../codec/wire-format.js';
import { Abortable } from '../abortable.js';
import type { RedisClient } from '../redis/connection.js';

type XReadReply = [stream: string, entries: [id: string, fields: string[]][]][] | null;

const READ_COUNT = 100;
const BLOCK_MS = 5_000;
const MAX_BACKOFF_MS = 2_000;
/** Handled replies are deleted in batches of this many, or after DELETE_AFTER_MS, whichever comes first. */
const DELETE_BATCH = 100;
const DELETE_AFTER_MS = 500;

/**
 * Reads this client's private reply stream with one blocking XREAD on a dedicated connection.
 * The stream has a single reader, so no consumer group: it reads from `0-0` (no entry can be
 * missed, even one written before the first read) and then from the last id seen. Handled
 * entries are deleted off the reply path: one XDEL per DELETE_BATCH replies or DELETE_AFTER_MS
 * (reads go by id, so a handled entry not yet deleted is never read again; the server's
 * `MAXLEN ~` bounds the stream meanwhile). A periodic PEXPIRE keeps the stream alive only
 * while this client lives.
 */
export class ReplyListener {
  private lastId = '0-0';
  private stopped = false;
  private loop: Promise<void> | undefined;
  private keepAlive: NodeJS.Timeout | undefined;
  private handledIds: string[] = [];
  private deleteTimer: NodeJS.Timeout | undefined;
  /** The read or backoff in progress; aborted by stop() (ioredis may never settle that read). */
  private readonly inFlight = new Abortable();
  constructor(
    private readonly reader: RedisClient,
    private readonly commands: RedisClient,
    readonly key: string,
    private readonly ttlMs: number,
    private readonly onReply: (fields: StreamFields, entryId: string) => void,
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
        const read = this.reader.xread('COUNT', READ_COUNT, 'BLOCK', BLOCK_MS, 'STREAMS', this.key, this.lastId);
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
      for (const [id, flat] of entries) {
        this.lastId = id;
        this.handledIds.push(id);
        try {
          this.onReply(fieldsFromArray(flat), id);
        } catch (error) {
          this.logger.error(`Reply ${id} on "${this.key}" could not be routed: ${(error as Error).message}`);
        }
      }
    }
    if (this.handledIds.length >= DELETE_BATCH) this.deleteHandled();
    else if (this.handledIds.length > 0 && this.deleteTimer === undefined) {
      this.deleteTimer = setTimeout(() => this.deleteHandled(), DELETE_AFTER_MS);
      this.deleteTimer.unref();
    }
  }

  private deleteHandled(): void {
    clearTimeout(this.deleteTimer);
    this.deleteTimer = undefined;
    if (this.stopped || this.handledIds.length === 0) return;
    const ids = this.handledIds;
    this.handledIds = [];
    this.commands.xdel(this.key, ...ids).catch((error: unknown) => {
      this.logger.warn(`XDEL of handled replies on "${this.key}" failed: ${(error as Error).message}`);
    });
  }

  private renew(): void {
    this.commands.pexpire(this.key, this.ttlMs).catch(() => undefined);
  }
}

function afterThisTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
