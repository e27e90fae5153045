import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { batchThisTick } from '../../src/redis/tick-batching.js';
import { recordSocketWrites } from '../helpers/socket-writes.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

describe('batchThisTick', () => {
  const redis = useRedisServer();
  const clients: Redis[] = [];
  afterEach(() => {
    for (const client of clients.splice(0)) client.disconnect();
  });

  it('sends the commands of one tick in one socket write, in the order sent', async () => {
    const client = redis.server.client();
    clients.push(client);
    await client.ping();
    const writes = recordSocketWrites(client);
    try {
      const replies: Promise<unknown>[] = [];
      for (let i = 0; i < 50; i++) {
        batchThisTick(client);
        replies.push(client.rpush('order', String(i)));
      }
      expect(writes.count()).toBe(0);
      await Promise.all(replies);
      expect(writes.count()).toBe(1);
      expect(await client.lrange('order', 0, -1)).toEqual(Array.from({ length: 50 }, (_, i) => String(i)));
    } finally {
      writes.restore();
    }
  });

  it('writes a lone command before the event loop turns (no setImmediate wait)', async () => {
    const client = redis.server.client();
    clients.push(client);
    await client.ping();
    const writes = recordSocketWrites(client);
    try {
      let writtenBeforeImmediate = false;
      const immediate = new Promise<void>((resolve) =>
        setImmediate(() => {
          writtenBeforeImmediate = writes.count() === 1;
          resolve();
        }),
      );
      batchThisTick(client);
      const reply = client.set('lone', '1');
      await immediate;
      expect(writtenBeforeImmediate).toBe(true);
      expect(await reply).toBe('OK');
    } finally {
      writes.restore();
    }
  });

  it('leaves a closed connection alone (nothing corked that no write would ever flush)', async () => {
    const client = redis.server.client();
    clients.push(client);
    await client.ping();
    const socket = client.stream;
    client.disconnect();
    batchThisTick(client);
    expect(socket.writableCorked).toBe(0);
  });
});
