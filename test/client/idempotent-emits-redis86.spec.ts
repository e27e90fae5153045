import { lastValueFrom } from 'rxjs';
import type { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient, type RedisStreamsClientOptions } from '../../src/index.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { RedisStreamsPublishError } from '../../src/client/errors.js';
import { RedisStreamsCapabilityError } from '../../src/errors.js';
import { contentPartitionOf } from '../../src/client/content-partition.js';
import { partitionStreamKeys } from '../../src/partitions/partition-keys.js';
import { redisBuild, RedisServerProcess } from '../helpers/redis-server.js';

/**
 * IDMP needs Redis 8.6: these tests start that build themselves, whatever REDIS_SERVER_BIN the
 * matrix runs, and fail over to a server without IDMP (Valkey 8) on the same port.
 */
const REDIS_86 = redisBuild('redis-8.6.3');
const WITHOUT_IDMP = redisBuild('valkey-8.0.1');

/** What an emit settled with: its id, or the error. */
function settled(emitted: Promise<unknown>): Promise<unknown> {
  return emitted.catch((error: unknown) => error);
}

/** The emit failed with a capability error naming `option`, and no raw server reply anywhere in it. */
function expectCapabilityFailure(failure: unknown, option: string): void {
  expect(failure).toBeInstanceOf(RedisStreamsPublishError);
  const { cause } = failure as RedisStreamsPublishError;
  expect(cause).toBeInstanceOf(RedisStreamsCapabilityError);
  expect(cause).toMatchObject({ option, capability: 'idmp', since: '8.6' });
  expect((failure as Error).message).not.toMatch(/Invalid stream ID|syntax error|ERR /);
}

describe('the partition of an emit routed by its content (pure)', () => {
  const partitionOf = (fields: (string | Buffer)[]) => contentPartitionOf(['orders', 'IDMPAUTO', 'p', '*', ...fields], 4, 1024);

  it('hashes the bytes Redis receives: a string and its UTF-8 Buffer land together (emoji, lone surrogates as U+FFFD)', () => {
    for (const text of ['kettle', 'café', '€ 5', '🫖 tea', 'lone \ud800 surrogate', 'end \udc00', '']) {
      expect(partitionOf(['data', text])).toBe(partitionOf(['data', Buffer.from(text, 'utf8')]));
    }
  });

  it('ignores the order of the field/value pairs (as IDMPAUTO does), not which value goes with which name', () => {
    expect(partitionOf(['a', '1', 'b', '2'])).toBe(partitionOf(['b', '2', 'a', '1']));
    const spread = new Set(Array.from({ length: 64 }, (_, n) => partitionOf(['data', `{"n":${n}}`])));
    expect(spread.size).toBeGreaterThan(1);
  });
});

describe.skipIf(REDIS_86 === undefined || WITHOUT_IDMP === undefined)('retry-safe emits on Redis 8.6.3 (picked explicitly)', () => {
  let server: RedisServerProcess;
  let admin: Redis;
  const clients: RedisStreamsClient[] = [];
  const client = (options: RedisStreamsClientOptions): RedisStreamsClient => {
    const created = new RedisStreamsClient({ connection: server.url, ...options });
    clients.push(created);
    return created;
  };
  const emit = (producer: RedisStreamsClient, pattern: string, data: unknown) => lastValueFrom(producer.emit<string | null>(pattern, data));

  beforeEach(async () => {
    server = await RedisServerProcess.start({ binary: REDIS_86 });
    admin = server.client();
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((created) => created.close()));
    admin.disconnect();
    await server.stop();
  });

  /** Kills the paused (or running) 8.6 server and starts Valkey 8, which has no IDMP, on its port. */
  async function failOverToServerWithoutIdmp(): Promise<void> {
    admin.disconnect();
    await server.restart({ binary: WITHOUT_IDMP });
    admin = server.client();
  }

  describe('IDMPAUTO and idempotency keys on a partitioned pattern', () => {
    const total = async (): Promise<number> => {
      let sum = 0;
      for (const key of partitionStreamKeys('orders', 2)) sum += await admin.xlen(key);
      return sum;
    };

    it('the same data emitted twice is one entry: both emits land in one partition and get its id', async () => {
      const producer = client({ idempotence: true, partitions: { orders: 2 } });
      const first = await emit(producer, 'orders', { item: 'kettle' });
      const second = await emit(producer, 'orders', { item: 'kettle' });
      expect(second).toBe(first);
      expect(await total()).toBe(1);
    });

    it('distinct data still spreads over the partitions, and each repeat meets its first write', async () => {
      const producer = client({ idempotence: true, partitions: { orders: 2 } });
      const items = Array.from({ length: 20 }, (_, n) => ({ n }));
      const firsts = await Promise.all(items.map((item) => emit(producer, 'orders', item)));
      const repeats = await Promise.all(items.map((item) => emit(producer, 'orders', item)));
      expect(repeats).toEqual(firsts);
      expect(await total()).toBe(20);
      for (const key of partitionStreamKeys('orders', 2)) expect(await admin.xlen(key)).toBeGreaterThan(0);
    });

    it('raw records: the same fields in another order are one entry (IDMPAUTO ignores their order, so does the routing)', async () => {
      const producer = client({ idempotence: true, partitions: { orders: 2 } });
      const first = await emit(producer, 'orders', new RedisStreamsRecord({ item: 'kettle', qty: 1 }, { raw: true }));
      const second = await emit(producer, 'orders', new RedisStreamsRecord({ qty: 1, item: 'kettle' }, { raw: true }));
      expect(second).toBe(first);
      expect(await total()).toBe(1);
    });

    it('an idempotency key routes by the key: other data under the same key is the first entry', async () => {
      const producer = client({ idempotence: true, partitions: { orders: 2 } });
      const first = await emit(producer, 'orders', new RedisStreamsRecord({ v: 1 }, { idempotencyKey: 'order-7' }));
      const second = await emit(producer, 'orders', new RedisStreamsRecord({ v: 2 }, { idempotencyKey: 'order-7' }));
      expect(second).toBe(first);
      expect(await total()).toBe(1);
    });
  });

  describe('a failover to a server without IDMP', () => {
    it('an emit whose retry is due when the port comes back as Valkey 8 fails with RedisStreamsCapabilityError, nothing raw, nothing written', async () => {
      const producer = client({ commandTimeout: 300, idempotence: { retries: 100, retryDelay: 100 } });
      await emit(producer, 'orders', { n: 0 }); // the pattern's partition check is done
      // The XADDs go out and get no answer; the kill below fails them, their retries are due.
      server.pause();
      const keyed = settled(emit(producer, 'orders', new RedisStreamsRecord({ n: 1 }, { idempotencyKey: 'order-1' })));
      const auto = settled(emit(producer, 'orders', { n: 2 }));
      await failOverToServerWithoutIdmp();
      expectCapabilityFailure(await keyed, 'idempotencyKey');
      expectCapabilityFailure(await auto, 'idempotence');
      expect(await admin.exists('orders')).toBe(0);
    }, 30_000);

    it('an emit sent on the new connection before its re-probe answered is checked against the new server', async () => {
      // No `idempotence`: the first connect needs nothing, a record's key needs IDMP on its emit.
      const producer = client({ commandTimeout: 1_000 });
      await emit(producer, 'orders', { n: 0 });
      // Registered after connect: runs right after the re-probe was sent, long before its answer.
      let atReconnect: Promise<unknown> | undefined;
      producer.on('ready', () => {
        atReconnect ??= settled(emit(producer, 'orders', new RedisStreamsRecord({ n: 1 }, { idempotencyKey: 'order-1' })));
      });
      await failOverToServerWithoutIdmp();
      await expect.poll(() => atReconnect, { timeout: 10_000 }).toBeDefined();
      expectCapabilityFailure(await atReconnect, 'idempotencyKey');
      expect(await admin.exists('orders')).toBe(0);
      // Emits that need no IDMP go on.
      expect(await emit(producer, 'orders', { n: 2 })).toMatch(/^\d+-\d+$/);
    }, 30_000);
  });

  describe('close()', () => {
    it('ends an emit waiting for its retry at once with "Connection closed"; nothing is retried after it', async () => {
      const producer = client({ commandTimeout: 300, idempotence: { retries: 100, retryDelay: 100 } });
      await emit(producer, 'orders', { n: 0 });
      // Redis gone: every attempt fails at once ("not ready") and waits for the next.
      await server.kill();
      const pending = settled(emit(producer, 'orders', new RedisStreamsRecord({ n: 1 }, { idempotencyKey: 'order-1' })));
      await producer.close();
      const failure = await pending;
      expect(failure).toBeInstanceOf(RedisStreamsPublishError);
      expect((failure as RedisStreamsPublishError).cause).toMatchObject({ message: 'Connection closed' });
    }, 30_000);
  });
});
