// Worker child: the floor of a Redis-side rate limit (flow-cost): the raw XREADGROUP + XACK loop
// plus one call of this package's token-bucket script (src/flow/scripts/rate-limit.lua, EVALSHA,
// registered by its loader, which puts the token-bucket arithmetic in front of it)
// per read, for as many entries as the read asks; tokens a short read did not use go back. Options:
// `rateLimitMax`, `rateLimitPer` (ms), as the server's `extras.rateLimit`.
import { Redis } from 'ioredis';
import { rateLimitKey } from '../../src/flow/flow-keys.js';
import { flowScripts } from '../../src/flow/scripts/loader.js';
import { sleep } from '../clock.js';
import { ensureGroup, RawConsumerLoop, type StreamReply } from '../raw-loop.js';
import { serveWorker } from './harness.js';

class RateLimitedLoop extends RawConsumerLoop {
  private readonly bucket: string;

  constructor(redis: Redis, key: string, group: string, handle: (payload: unknown) => void, private readonly max: number, private readonly perMs: number) {
    super(redis, key, group, 'raw-rate-floor', handle);
    this.bucket = rateLimitKey(key, group);
  }

  protected override async read(count: number): Promise<StreamReply> {
    const bucket = flowScripts(this.redis);
    const [granted, waitMs] = await bucket.nrsRateLimit(this.bucket, 'take', this.max, this.perMs, count);
    if (Number(granted) === 0) {
      await sleep(Number(waitMs));
      return null;
    }
    const reply = await super.read(Number(granted));
    const unused = Number(granted) - (reply?.[0]?.[1]?.length ?? 0);
    if (unused > 0) await bucket.nrsRateLimit(this.bucket, 'refund', this.max, this.perMs, unused);
    return reply;
  }
}

await serveWorker(async (probe, config) => {
  const redis = new Redis(config.redisUrl);
  await ensureGroup(redis, config.key, config.group);
  const { rateLimitMax = 10_000_000, rateLimitPer = 1000 } = (config.options ?? {}) as Record<string, number>;
  const loop = new RateLimitedLoop(redis, config.key, config.group, (payload) => probe.onMessage(payload), rateLimitMax, rateLimitPer);
  return {
    start: async () => loop.start(),
    stop: async () => {
      await loop.stop();
      await redis.quit();
    },
  };
});
