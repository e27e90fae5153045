import type { RedisClient } from '../redis/connection.js';

/**
 * The waits of one client on the lifecycle notices (`client.result({ wait })`, `client.watch`),
 * sharing one blocking connection per notice stream (`{orders}:lifecycle`): a thousand callers
 * waiting for entries of one stream hold one connection, not a thousand. Each notice read is
 * handed to the waiters of its entry id. A waiter registers first and reads its record after
 * ({@link NoticeListeners.listen}), so a record written in between is seen by the read or
 * announced by a notice: never missed, never polled.
 */

/** A connection that may block (its own socket), and how to let it go. */
export interface BlockingConnection {
  readonly client: RedisClient;
  close(): Promise<void>;
}

/** One waiter: the entry id it waits on, told of each notice of that id, and when notices may have been lost. */
export interface NoticeWaiter {
  readonly id: string;
  /** A notice of this entry (`progress`, `result`, `settled`). */
  notice(kind: string): void;
  /** The notices were lost (a Redis restart without persistence): read the record again. */
  resync(): void;
  /** The client closed: no notice comes any more. */
  ended(): void;
}

/** Longest single block: a listener checks its place in the notices at least this often. */
export const NOTICE_BLOCK_MS = 5_000;
/** After a failed read (Redis restarting), a listener reads again after this long. */
const RETRY_AFTER_ERROR_MS = 250;
/** Most notices taken by one read. */
const READ_COUNT = 1_000;

export class NoticeListeners {
  private readonly listeners = new Map<string, NoticeStreamListener>();

  constructor(
    /** The command connection: a listener's starting place and its check after an error. */
    private readonly client: RedisClient,
    private readonly openBlocking: () => BlockingConnection,
  ) {}

  /**
   * Registers `waiter` on the notices of `key`; resolves once every notice written from then on
   * reaches it. The returned function unregisters it (the last waiter of a stream ends its listener
   * and closes its connection).
   */
  async listen(key: string, waiter: NoticeWaiter): Promise<() => void> {
    let listener = this.listeners.get(key);
    if (listener === undefined) {
      const created = new NoticeStreamListener(key, this.client, this.openBlocking, () => {
        if (this.listeners.get(key) === created) this.listeners.delete(key);
      });
      listener = created;
      this.listeners.set(key, listener);
    }
    return listener.add(waiter);
  }

  /** Blocking connections open now (one per notice stream with waiters). */
  get connections(): number {
    let open = 0;
    for (const listener of this.listeners.values()) if (listener.connected) open++;
    return open;
  }

  /** Ends every listener and closes its connection: their waits end as if nothing came (a result wait: `null`). */
  async close(): Promise<void> {
    const listeners = [...this.listeners.values()];
    this.listeners.clear();
    await Promise.all(listeners.map((listener) => listener.stop()));
  }
}

/** One notice stream's blocking reader, alive while it has waiters. */
class NoticeStreamListener {
  /** Waiters by entry id: a notice reaches its entry's waiters only. */
  private readonly waiters = new Map<string, Set<NoticeWaiter>>();
  private blocking: BlockingConnection | undefined;
  /** The newest notice read (or seen at the start): the next read takes what comes after it. */
  private cursor: Promise<string> | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly key: string,
    private readonly client: RedisClient,
    private readonly openBlocking: () => BlockingConnection,
    private readonly ended: () => void,
  ) {}

  get connected(): boolean {
    return this.blocking !== undefined;
  }

  async add(waiter: NoticeWaiter): Promise<() => void> {
    let ofEntry = this.waiters.get(waiter.id);
    if (ofEntry === undefined) this.waiters.set(waiter.id, (ofEntry = new Set()));
    ofEntry.add(waiter);
    // The place is read before the waiter's record: a notice after it is handed on.
    this.cursor ??= newestNotice(this.client, this.key);
    try {
      await this.cursor;
    } catch (error) {
      this.cursor = undefined;
      this.remove(waiter);
      throw error;
    }
    if (this.stopped) {
      waiter.ended();
      return () => undefined;
    }
    this.running ??= this.run();
    return () => this.remove(waiter);
  }

  private remove(waiter: NoticeWaiter): void {
    const ofEntry = this.waiters.get(waiter.id);
    ofEntry?.delete(waiter);
    if (ofEntry?.size === 0) this.waiters.delete(waiter.id);
    if (this.waiters.size === 0) void this.stop();
  }

  private everyWaiter(): NoticeWaiter[] {
    return [...this.waiters.values()].flatMap((ofEntry) => [...ofEntry]);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.ended();
    const waiters = this.everyWaiter();
    this.waiters.clear();
    for (const waiter of waiters) waiter.ended();
    const blocking = this.blocking;
    this.blocking = undefined;
    await blocking?.close();
    await this.running;
  }

  private async run(): Promise<void> {
    let from = await (this.cursor as Promise<string>);
    if (this.stopped) return;
    this.blocking = this.openBlocking();
    while (!this.stopped) {
      try {
        const read = await readNotices((this.blocking as BlockingConnection).client, this.key, from, NOTICE_BLOCK_MS);
        if (read === null || this.stopped) continue;
        from = read.last;
        for (const notice of read.notices) for (const waiter of this.waiters.get(notice.id) ?? []) waiter.notice(notice.kind);
      } catch {
        if (this.stopped) return;
        await new Promise((resolve) => setTimeout(resolve, RETRY_AFTER_ERROR_MS));
        // Notices may be gone with a restart (no persistence): start from the newest, and let every waiter read its record again.
        if (!(await stillThere(this.client, this.key, from))) {
          from = await newestNotice(this.client, this.key).catch(() => from);
          for (const waiter of this.everyWaiter()) waiter.resync();
        }
      }
    }
  }
}

/** The newest notice's id, `0-0` when there is none. */
async function newestNotice(client: RedisClient, key: string): Promise<string> {
  const rows = await client.xrevrange(key, '+', '-', 'COUNT', 1);
  return rows.length === 0 ? '0-0' : (rows[0] as [string, string[]])[0];
}

/** Whether the notice `from` still exists (a restart without persistence lost the notices). */
async function stillThere(client: RedisClient, key: string, from: string): Promise<boolean> {
  if (from === '0-0') return true;
  try {
    return (await client.xrange(key, from, from)).length === 1;
  } catch {
    return false;
  }
}

interface NoticeRead {
  readonly last: string;
  readonly notices: { id: string; kind: string }[];
}

/** One blocking read of the notices after `from`; `null` when none came within `blockMs`. */
async function readNotices(client: RedisClient, key: string, from: string, blockMs: number): Promise<NoticeRead | null> {
  const reply = (await client.xread('COUNT', READ_COUNT, 'BLOCK', Math.max(1, Math.ceil(blockMs)), 'STREAMS', key, from)) as [string, [string, string[]][]][] | null;
  if (reply === null || reply.length === 0) return null;
  const rows = (reply[0] as [string, [string, string[]][]])[1];
  if (rows.length === 0) return null;
  const notices = rows.map(([, fields]) => ({ id: fieldOf(fields, 'id'), kind: fieldOf(fields, 'kind') }));
  return { last: (rows[rows.length - 1] as [string, string[]])[0], notices };
}

function fieldOf(fields: readonly string[], name: string): string {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1] as string;
  return '';
}
