import { describe, expect, it } from 'vitest';
import { rateLimitKey } from '../../src/flow/flow-keys.js';
import { SharedRateLimit } from '../../src/flow/shared-rate-limit.js';
import { StartTokens } from '../../src/server/start-tokens.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/** The script calls Redis ran so far (EVALSHA and the first EVAL that loads the script). */
function scriptCalls(info: string): number {
  return [...info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
}

/**
 * The fresh start tokens of entries whose read's tokens went stale (start-tokens.ts): the entries
 * the lanes start together ask in one turn, and share one take of the handler's bucket.
 */
describe('StartTokens: the fresh tokens asked in one turn are one take', () => {
  const redis = useRedisServer();

  it('asks of one turn make one script call; the first get the tokens there are, the rest none with a wait', async () => {
    const rate = new SharedRateLimit(redis.client, 'late', 'g', { max: 2, perMs: 60_000, key: undefined });
    const tokens = new StartTokens();
    const before = scriptCalls(String(await redis.client.info('commandstats')));
    const grants = await Promise.all([tokens.take(rate), tokens.take(rate), tokens.take(rate)]);
    expect(scriptCalls(String(await redis.client.info('commandstats')))).toBe(before + 1);
    expect(grants.map((grant) => grant.granted)).toEqual([1, 1, 0]);
    // One token's time at 2 a minute: the unserved ask waits for the next one, not a spin.
    expect(grants[2]?.waitMs).toBe(30_000);
    expect(Math.floor(Number(await redis.client.hget(rateLimitKey('late', 'g'), 'tokens')))).toBe(0);
  });
});
