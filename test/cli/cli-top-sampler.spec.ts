import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { sampleStreams } from '../../src/cli/top/top-sampler.js';
import { promoteDelayedNow } from '../../src/delayed/delayed-inspection.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

describe("top's sample: the figures of one moment", () => {
  const redis = useRedisServer();
  let producer: RedisStreamsClient;
  let sampler: Redis;

  beforeAll(() => {
    producer = new RedisStreamsClient({ connection: redis.server.url });
    sampler = redis.server.client();
  });
  afterAll(async () => {
    await producer.close();
    sampler.disconnect();
  });

  it('a promotion while a sample is read counts its entries once: held and due before it, in the stream after it, never in neither', async () => {
    // Promoted right after the sample's first commands are written. Read apart (the delayed
    // counts waited for TIME's answer, XINFO STREAM did not), it fell between them in most rounds.
    for (let round = 0; round < 20; round++) {
      const stream = `scheduled-${round}`;
      await redis.client.xgroup('CREATE', stream, 'billing', '0', 'MKSTREAM');
      for (const n of [1, 2]) await lastValueFrom(producer.emit(stream, new RedisStreamsRecord({ n }, { deliverAt: 1_000 })));

      const sampling = sampleStreams(sampler, [stream], []);
      await new Promise((resolve) => setImmediate(resolve));
      const [sample, promotion] = await Promise.all([sampling, promoteDelayedNow(redis.client, stream)]);

      expect(promotion.promoted).toHaveLength(2);
      expect(sample.streams).toHaveLength(1);
      const { length, delayed } = sample.streams[0]!;
      expect([
        { length: 0, delayed: { held: 2, due: 2 } },
        { length: 2, delayed: { held: 0, due: 0 } },
      ]).toContainEqual({ length, delayed });
    }
  }, 60_000);
});
