import type { RedisClient } from '../redis/connection.js';

export type RedisStreamsStatus = 'connected' | 'disconnected' | 'reconnecting';

const EVENTS = ['ready', 'close', 'end', 'reconnecting', 'connecting'] as const;

/**
 * Folds the states of the server's connections into one status: `connected` when every
 * connection is ready, `reconnecting` while any reconnects, `disconnected` otherwise. Nothing is
 * reported before the first `connected` (startup is not a "reconnect").
 */
export class ConnectionStatusTracker {
  /** Per client: its listeners and the state its last event told (ioredis emits events a tick late, so `client.status` may be ahead). */
  private readonly clients = new Map<RedisClient, { state: string; listeners: Array<[string, () => void]> }>();
  private last: RedisStreamsStatus | undefined;
  private everConnected = false;

  constructor(private readonly report: (status: RedisStreamsStatus) => void) {}

  watch(client: RedisClient): void {
    if (this.clients.has(client)) return;
    const watched = { state: client.status as string, listeners: [] as Array<[string, () => void]> };
    for (const event of EVENTS) {
      const listener = (): void => {
        watched.state = event;
        this.update();
      };
      watched.listeners.push([event, listener]);
      client.on(event, listener);
    }
    this.clients.set(client, watched);
    this.update();
  }

  /** Stops following `client` (a connection ended on purpose while the others run). */
  unwatch(client: RedisClient): void {
    const watched = this.clients.get(client);
    if (watched === undefined) return;
    for (const [event, listener] of watched.listeners) client.off(event, listener);
    this.clients.delete(client);
    this.update();
  }

  stop(): void {
    for (const [client, { listeners }] of this.clients) {
      for (const [event, listener] of listeners) client.off(event, listener);
    }
    this.clients.clear();
  }

  private update(): void {
    const status = this.current();
    if (status === 'connected') this.everConnected = true;
    if (!this.everConnected || status === this.last) return;
    this.last = status;
    this.report(status);
  }

  private current(): RedisStreamsStatus {
    let reconnecting = false;
    let down = false;
    for (const { state } of this.clients.values()) {
      if (state === 'ready') continue;
      if (state === 'reconnecting' || state === 'connecting' || state === 'connect') reconnecting = true;
      else down = true;
    }
    if (down) return 'disconnected';
    return reconnecting ? 'reconnecting' : 'connected';
  }
}
