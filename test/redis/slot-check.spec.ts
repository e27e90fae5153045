import { Logger } from '@nestjs/common';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

describe('keys one script touches together, on standalone Redis', () => {
  const redis = useRedisServer();
  const warnings: string[] = [];
  afterEach(() => {
    Logger.overrideLogger(true as never);
    warnings.length = 0;
  });

  it.each([
    ['a deadLetterKey in another slot: one warning naming the option, and the server still listens', (stream: string) => `dead:${stream}`, 1],
    ['the default dead-letter keys: no warning', undefined, 0],
  ])('%s', async (_, deadLetterKey, expected) => {
    Logger.overrideLogger({ log: () => undefined, error: () => undefined, warn: (message: unknown) => warnings.push(String(message)), debug: () => undefined, verbose: () => undefined, fatal: () => undefined } as never);
    const server = new RedisStreamsServer({ connection: redis.server.url, group: 'g', recovery: deadLetterKey === undefined ? {} : { deadLetterKey } });
    server.addHandler('orders', async () => undefined, true);
    const error = await new Promise<unknown>((resolve) => void server.listen(resolve));
    await server.close();
    expect(error).toBeUndefined();
    const slotWarnings = warnings.filter((line) => line.includes('hash slot'));
    expect(slotWarnings).toHaveLength(expected);
    if (expected === 1) expect(slotWarnings[0]).toMatch(/^recovery\.deadLetterKey: "dead:orders" \(hash slot \d+\) is not in the hash slot of stream "orders"/);
  });
});
