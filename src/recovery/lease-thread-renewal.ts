/**
 * The lease thread's Redis side (lease-thread.ts loads it on first need, not at start: ioredis and
 * our Redis modules are most of the thread's start-up CPU and footprint, docs/benchmarks.md,
 * "Lease thread"): its own connection, made from the server's connection option, and the renewal
 * round (XPENDING of this consumer, page by page, then the owner-checked renewal of leases.ts).
 */
import { errorMessage } from '../error-message.js';
import { closeConnection, describeConnection, openConnection, type OpenedConnection, type RedisClient } from '../redis/connection.js';
import { whenReady } from '../redis/ready.js';
import { reviveThreadConnection } from '../redis/thread-connection.js';
import { renewLeases } from './leases.js';
import type { FromLeaseThread, LeaseThreadData } from './lease-thread-protocol.js';

/** Pending entries listed per XPENDING call. */
const PAGE = 1000;

export class LeaseRenewal {
  private opened: OpenedConnection | undefined;
  private connecting: Promise<RedisClient> | undefined;
  private closed = false;

  constructor(
    private readonly data: LeaseThreadData,
    private readonly send: (message: FromLeaseThread) => void,
  ) {}

  /**
   * The connection, ready (connected now if need be, within the server's `startupTimeout`). A
   * connect that fails is closed and rejects; the next call tries again. Once ready, ioredis
   * reconnects it on its own, like the server's other connections.
   */
  connect(): Promise<RedisClient> {
    this.connecting ??= this.open().catch((error: unknown) => {
      this.connecting = undefined;
      throw error;
    });
    return this.connecting;
  }

  get connected(): boolean {
    return this.opened?.client.status === 'ready';
  }

  private async open(): Promise<RedisClient> {
    if (this.closed) throw new Error('the lease thread is stopping');
    const connection = reviveThreadConnection(this.data.connection);
    const opened = openConnection(connection, 'lease-renewal');
    this.opened = opened;
    // Reconnects are reported by the failed renewals; the status events need no listener here.
    opened.client.on('error', () => undefined);
    try {
      await whenReady(opened.client, this.data.connectTimeout, describeConnection(connection));
    } catch (error) {
      if (this.opened === opened) this.opened = undefined;
      await closeConnection(opened);
      throw error;
    }
    return opened.client;
  }

  /** One round: every entry pending for this consumer, per stream + group, renewed page by page. Returns how many it renewed. */
  async round(stopping: () => boolean): Promise<number> {
    let client: RedisClient;
    try {
      client = await this.connect();
    } catch (error) {
      if (!stopping()) this.send({ type: 'error', message: `lease renewal could not connect: ${errorMessage(error)}` });
      return 0;
    }
    let renewedNow = 0;
    for (const [stream, group] of this.data.streams) {
      let start = '-';
      while (!stopping()) {
        let ids: string[];
        try {
          const rows = (await client.call('XPENDING', stream, group, start, '+', PAGE, this.data.consumer)) as Array<[string, ...unknown[]]>;
          ids = rows.map(([id]) => String(id));
        } catch (error) {
          this.send({ type: 'error', message: `lease renewal on "${stream}" (group "${group}") could not list its pending entries: ${errorMessage(error)}` });
          break;
        }
        if (ids.length === 0) break;
        try {
          const { renewed, lost } = await renewLeases(client, { stream, group, consumer: this.data.consumer, ids });
          renewedNow += renewed.length;
          if (renewed.length > 0) this.send({ type: 'renewed', count: renewed.length });
          // The main thread decides what to report (what it still works on).
          if (lost.length > 0) this.send({ type: 'lost', stream, group, leases: lost });
        } catch (error) {
          this.send({ type: 'error', message: `lease renewal on "${stream}" (group "${group}") failed: ${errorMessage(error)}` });
          break;
        }
        if (ids.length < PAGE) break;
        start = `(${ids[ids.length - 1] as string}`;
      }
    }
    return renewedNow;
  }

  /**
   * Drops the connection; a connect under way ends (rejects) with it. No QUIT: a round in progress
   * finished first, so nothing is queued on it, and a QUIT would only wait on a Redis that does not answer.
   */
  async close(): Promise<void> {
    this.closed = true;
    const opened = this.opened;
    this.opened = undefined;
    await closeConnection(opened, 0);
  }
}
