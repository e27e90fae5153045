import { describe, expect, it } from 'vitest';
import { rateLimitKey } from '../../src/flow/flow-keys.js';
import { SharedRateLimit } from '../../src/flow/shared-rate-limit.js';
import { grantFromLimits, type BindingLimits } from '../../src/server/binding-limits.js';
import { ReadTokens } from '../../src/server/read-tokens.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/** The script calls Redis ran so far (EVALSHA and the first EVAL that loads the script). */
async function scriptCalls(redis: { info(section: string): Promise<string> }): Promise<number> {
  return [...(await redis.info('commandstats')).matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
}

/**
 * A rate-limited reader's tokens (read-tokens.ts): taken for several reads at once while its reads
 * use them all, each only while fresh (a fiftieth of `per`), what is left given back.
 */
describe('ReadTokens: tokens for several reads in one take, used only while fresh', () => {
  const redis = useRedisServer();
  const bucketTokens = async (stream: string): Promise<number> => Number(await redis.client.hget(rateLimitKey(stream, 'g'), 'tokens'));

  it('a take used up doubles the next; reads served from what is left make no script call and answer at once; what is left goes back when a read comes back short', async () => {
    // 1,000 an hour: fresh for 72 s, and no token refills while the test runs.
    const rate = new SharedRateLimit(redis.client, 'doubling', 'g', { max: 1_000, perMs: 3_600_000, key: undefined });
    const tokens = new ReadTokens(rate);
    const limits: BindingLimits = { rate, perKey: undefined, permits: undefined };
    const before = await scriptCalls(redis.client);
    const served: number[] = [];
    const atOnce: boolean[] = [];
    for (let read = 0; read < 4; read++) {
      // As the limited reader asks (stream-reader.ts readLimited): no promise to await while the tokens are in hand.
      const grant = grantFromLimits(limits, 10, 10, tokens);
      atOnce.push(!(grant instanceof Promise));
      served.push((await grant).granted);
    }
    expect(served).toEqual([10, 10, 10, 10]);
    // The third read is served from what the second take (two reads' worth) left.
    expect(atOnce).toEqual([false, false, true, false]);
    // Takes of 10 (used up), 20 (two reads), 40: three calls for four reads.
    expect((await scriptCalls(redis.client)) - before).toBe(3);
    expect(Math.floor(await bucketTokens('doubling'))).toBe(1_000 - 70);
    // The read came back short: the 30 left go back, and the next take asks for half as many reads (two, 20).
    tokens.giveBack();
    await waitFor(async () => Math.floor(await bucketTokens('doubling')) === 1_000 - 40, 'the 30 left given back', { timeout: 2_000 });
    expect((await tokens.take(10)).granted).toBe(10);
    expect(Math.floor(await bucketTokens('doubling'))).toBe(1_000 - 40 - 20);
  });

  it('what is left serves no read once stale: it goes back unasked, and the next read takes fresh tokens', async () => {
    // Fresh for 20 ms (a fiftieth of 1 s); 100,000 a second is never short here.
    const rate = new SharedRateLimit(redis.client, 'stale', 'g', { max: 100_000, perMs: 1_000, key: undefined });
    const tokens = new ReadTokens(rate);
    const before = await scriptCalls(redis.client);
    await tokens.take(10);
    const takenAt = performance.now();
    await tokens.take(10);
    expect(tokens.servedTakenAt).toBeGreaterThanOrEqual(takenAt);
    // The second take asked for two reads: 10 are left, and go back when stale without a read asking.
    await waitFor(async () => (await scriptCalls(redis.client)) - before === 3, 'the stale tokens refunded', { timeout: 2_000 });
    const refundedAt = performance.now();
    expect(refundedAt - takenAt).toBeGreaterThanOrEqual(20);
    expect((await tokens.take(10)).granted).toBe(10);
    expect((await scriptCalls(redis.client)) - before).toBe(4);
    expect(tokens.servedTakenAt).toBeGreaterThanOrEqual(refundedAt);
  });

  it('a take short of what it asked (the limit binds) is served, and the next take asks for one read: the workers share the bucket read by read', async () => {
    // 30 an hour: the fourth read's take (asking for four reads, 20) gets the 15 left.
    const rate = new SharedRateLimit(redis.client, 'binding', 'g', { max: 30, perMs: 3_600_000, key: undefined });
    const tokens = new ReadTokens(rate);
    const served: number[] = [];
    for (let read = 0; read < 6; read++) served.push((await tokens.take(5)).granted);
    expect(served).toEqual([5, 5, 5, 5, 5, 5]);
    expect(Math.floor(await bucketTokens('binding'))).toBe(0);
    // 10 come back (another worker's refund): the next take asks for one read's 5, not four reads' 20.
    await rate.refund(10);
    expect((await tokens.take(5)).granted).toBe(5);
    expect(Math.floor(await bucketTokens('binding'))).toBe(5);
  });
});
