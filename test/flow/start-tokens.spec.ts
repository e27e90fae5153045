import { afterEach, describe, expect, it, vi } from 'vitest';
import { rateLimitKey } from '../../src/flow/flow-keys.js';
import { SharedRateLimit } from '../../src/flow/shared-rate-limit.js';
import { HandlerLanes } from '../../src/server/handler-lanes.js';
import type { InFlightEntry, StreamBinding } from '../../src/server/in-flight.js';
import { PrefetchSlots } from '../../src/server/prefetch-slots.js';
import type { ReplyEntry } from '../../src/server/read-reply.js';
import { LateStarts, StartTokens } from '../../src/server/start-tokens.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

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

/**
 * The reads whose entries wait behind busy handlers (start-tokens.ts `LateStarts`): their entries
 * still queued once the read's tokens are stale give them back. Its timer is the limited reader's
 * only per-read timer: with reads every millisecond and handlers keeping up, it must not fire once
 * per read.
 */
describe('LateStarts: one timer per fresh window, the entries left queued still go stale', () => {
  const redis = useRedisServer();
  // Puts the real setTimeout back (not vi.spyOn's restore: that would reinstall the fake one for the specs after).
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reads every millisecond whose entries all start arm about one timer per fiftieth of `per`; the last read\'s queued entry gives its token back when stale', async () => {
    // Fresh for 20 ms (a fiftieth of 1 s).
    const rate = new SharedRateLimit(redis.client, 'lanes', 'g', { max: 1_000_000, perMs: 1_000, key: undefined });
    const binding = { stream: 'lanes', group: 'g', key: 'lanes\0g', queue: [], running: 0, concurrency: 2 } as unknown as StreamBinding;
    const running: InFlightEntry[] = [];
    const lanes = new HandlerLanes(2, [binding]);
    lanes.handledBy({ start: (entry) => running.push(entry), startBatch: () => undefined });
    const slots = new PrefetchSlots(10_000);
    const lateStarts = new LateStarts(rate, binding);
    let id = 0;
    /** A read of 3: the lanes start 2 at once, the third waits for a handler. */
    const read = (): InFlightEntry => {
      const reply: ReplyEntry[] = [1, 2, 3].map(() => [`${++id}-0`, ['data', '{}']] as const);
      const admitted = slots.admitFresh(binding, reply);
      const first = binding.queue[binding.queue.length - admitted] as InFlightEntry;
      const last = binding.queue[binding.queue.length - 1] as InFlightEntry;
      lanes.queued(binding, admitted);
      lateStarts.read(first, last, performance.now());
      return last;
    };
    const finishRunning = (): void => {
      while (running.length > 0) lanes.finished(running.shift() as InFlightEntry);
    };
    const before = scriptCalls(String(await redis.client.info('commandstats')));
    // Time as the reads see it, stepped a millisecond a read (the timers' firing exact, whatever the host's load).
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const fakeSetTimeout = globalThis.setTimeout;
    let armed = 0;
    globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
      armed++;
      return fakeSetTimeout(...args);
    }) as typeof setTimeout;
    for (let n = 0; n < 80; n++) {
      read();
      // The handlers keep up: the two running finish, the third starts and finishes.
      finishRunning();
      vi.advanceTimersByTime(1);
    }
    // 80 ms of reads: one timer per 20-ms window is 4; one per read after the first window would be 60.
    expect(armed).toBeLessThanOrEqual(5);
    // The last read's third entry stays queued behind the two running handlers, past its tokens' freshness.
    const waiting = read();
    vi.advanceTimersByTime(20);
    expect(waiting.needsStartToken).toBe(true);
    expect(binding.queue.filter((entry) => entry.needsStartToken)).toEqual([waiting]);
    globalThis.setTimeout = fakeSetTimeout;
    vi.useRealTimers();
    // Its token went back: one refund, the only script call.
    await waitFor(async () => scriptCalls(String(await redis.client.info('commandstats'))) === before + 1, 'the one refund', { timeout: 2_000 });
    lateStarts.stop();
  });
});
