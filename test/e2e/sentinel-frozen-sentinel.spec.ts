import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { closeConnection, openConnection } from '../../src/redis/connection.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { withTimeout } from '../../src/timeout.js';
import { startCountedProducer } from '../helpers/counted-producer.js';
import { useRedisSentinel } from '../helpers/redis-sentinel.js';
import { waitFor } from '../helpers/wait.js';

describe('failover through sentinels while the first sentinel is frozen (SIGSTOP)', () => {
  const harness = useRedisSentinel();

  // Runs first: the set is whole (the next test kills its primary). ioredis sets no
  // sentinelCommandTimeout of its own: the first sentinel, stopped, accepted the connection and
  // never answered, and every connect waited on it for good instead of asking the next one.
  it('a first sentinel that accepts connections but never answers: server and client connect through the next one', { timeout: 60_000 }, async () => {
    const set = harness.set;
    const frozen = set.sentinels[0]!;
    const handled: number[] = [];
    const server = new RedisStreamsServer({ connection: set.url, group: 'sfz-first', blockMs: 100, shutdownTimeout: 500 });
    server.on('error', () => undefined);
    server.addHandler('sfz-first', async (n: number) => void handled.push(n), true);
    // A short commandTimeout bounds the client's connect (commandTimeout + 1 s): the sentinel's
    // default timeout follows it, so asking the frozen one first still leaves time for the next.
    const client = new RedisStreamsClient({ connection: set.url, commandTimeout: 1_000 });
    client.on('error', () => undefined);
    const plain = openConnection(set.url, 'frozen-first');
    frozen.pause();
    try {
      await withTimeout(plain.client.connect(), 20_000, 'a plain connection through the sentinels');
      expect(await plain.client.ping()).toBe('PONG');
      expect(await withTimeout(new Promise<unknown>((resolve) => void server.listen(resolve)), 20_000, 'listen()')).toBeUndefined();
      await withTimeout(lastValueFrom(client.emit('sfz-first', 7)), 20_000, 'the first emit');
      await waitFor(() => handled.includes(7), 'the worker to handle the emit', { timeout: 20_000 });
    } finally {
      frozen.resume();
      await closeConnection(plain);
      await client.close();
      await server.close();
    }
  });

  // The defect: after the kill, each connection's reconnect asked the frozen sentinel (the first
  // of the list) for the primary and waited; the two others promoted the replica and announced
  // +switch-master, which the failover detector of the closed connection still heard: it cancelled
  // the reconnect under way, the connections ended ("Connection is closed.") and the worker
  // stopped reading for good.
  it('kill -9 of the primary: once the sentinel answers again, producer and worker follow the promoted replica', { timeout: 120_000 }, async () => {
    const set = harness.set;
    const stream = 'sfz';
    const connection = set.url;
    const handled = new Set<number>();
    const server = new RedisStreamsServer({ connection, group: 'sfz', blockMs: 100, shutdownTimeout: 500, recovery: { minIdleTime: 500, interval: 200 } });
    server.on('error', () => undefined);
    server.addHandler(stream, async (n: number) => void handled.add(n), true);
    expect(await new Promise<unknown>((resolve) => void server.listen(resolve))).toBeUndefined();
    const client = new RedisStreamsClient({ connection, commandTimeout: 1_000 });
    client.on('error', () => undefined);

    // Hears the announcement the transport's detectors hear, on a sentinel that stays up.
    const announcements = set.sentinels[1]!.client();
    const switched = new Promise<void>((resolve) => announcements.on('message', (channel: string) => channel === '+switch-master' && resolve()));
    await announcements.connect();
    await announcements.subscribe('+switch-master');

    const producer = startCountedProducer(client, stream, 50);
    const { acknowledged } = producer;
    const old = set.primary;
    const frozen = set.sentinels[0]!;
    try {
      await waitFor(() => handled.size >= 100, '100 entries handled before the kill', { timeout: 20_000 });
      frozen.pause();
      await old.kill();
      const promoted = await set.waitForFailover(old);
      expect(promoted).toBe(set.replica);
      await switched;
      frozen.resume();

      const afterFailover = acknowledged.size;
      await waitFor(() => acknowledged.size >= afterFailover + 100, '100 emits acknowledged after the failover', { timeout: 30_000 }).catch((error: unknown) => {
        throw new Error(`${(error as Error).message}; last failures: ${JSON.stringify(producer.failures.slice(-3))}`);
      });
      await producer.stop();
      const written = [...acknowledged].filter(([n]) => n >= afterFailover).map(([n]) => n);
      await waitFor(() => written.every((n) => handled.has(n)), 'the worker to handle what was written to the promoted replica', { timeout: 30_000 }).catch((error: unknown) => {
        const missing = written.filter((n) => !handled.has(n));
        throw new Error(`${(error as Error).message}; not handled: ${missing.length} of ${written.length}; worker: ${JSON.stringify(server.liveness())}`);
      });
    } finally {
      frozen.resume();
      announcements.disconnect();
      await producer.stop();
      await client.close();
      await server.close();
    }
  });
});
