import { describe, expect, it } from 'vitest';
import { rateLimitKey } from '../../src/flow/flow-keys.js';
import { SharedRateLimit } from '../../src/flow/shared-rate-limit.js';
import { GrantAhead } from '../../src/server/grant-ahead.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';

// A limited reader's next grant, asked for while its read is in flight (src/server/grant-ahead.ts):
// tokens count starts, so tokens asked ahead serve only a read that follows within a fiftieth of `per`.

describe('GrantAhead: the next read\'s tokens, asked ahead', () => {
  const redis = useRedisServer();
  const tokensIn = async (stream: string): Promise<number> => Number(await redis.client.hget(rateLimitKey(stream, 'g'), 'tokens'));
  const aheadOn = (stream: string, perMs: number): GrantAhead =>
    new GrantAhead({ rate: new SharedRateLimit(redis.client, stream, 'g', { max: 10, perMs, key: undefined }), perKey: undefined, permits: undefined });

  it('a read that follows soon takes what it wants of them; the rest goes back to the bucket at once', async () => {
    // A fiftieth of ten minutes: 12 s to take them.
    const ahead = aheadOn('soon', 600_000);
    ahead.ask(10, 10);
    expect((await ahead.take(4)).granted).toBe(4);
    expect(ahead.out).toBe(false);
    await waitFor(async () => Math.floor(await tokensIn('soon')) === 6, 'the 6 not taken back in the bucket');
  });

  it('tokens older than a fiftieth of per serve no read: they all go back, the read asks afresh', async () => {
    // A fiftieth of one second: 20 ms.
    const ahead = aheadOn('late', 1_000);
    ahead.ask(10, 10);
    await waitFor(async () => (await tokensIn('late')) < 1, 'the 10 taken ahead');
    // Longer than 20 ms: an entry read on them would start on tokens the bucket partly refilled meanwhile.
    await sleep(100);
    expect((await ahead.take(10)).granted).toBe(0);
    await waitFor(async () => (await tokensIn('late')) === 10, 'all 10 back: the bucket full');
  });
});
