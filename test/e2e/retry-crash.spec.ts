import { describe, expect, it } from 'vitest';
import { pendingRows } from '../helpers/stream-state.js';
import { waitFor } from '../helpers/wait.js';
import { useWorkerFleets } from '../helpers/use-worker-fleets.js';

/**
 * A failed entry waits for its retry with the group's retry consumer, not with the worker that
 * failed it: a kill -9 of that worker during the wait changes nothing, another worker retries
 * it on schedule (measured on Redis' clock, recorded by the handlers), long before minIdleTime.
 */
describe('retry backoff across worker processes (real redis-server)', () => {
  const harness = useWorkerFleets();

  async function runs(key: string) {
    return (await harness.client.lrange(key, 0, -1)).map((line) => {
      const [id, count, consumer, at, outcome] = line.split(':') as [string, string, string, string, string];
      return { id, deliveryCount: Number(count), consumer, at: Number(at), outcome };
    });
  }

  it('kill -9 of the failing worker during the backoff wait: another worker retries the entry on schedule, count 2', async () => {
    const stream = 'retry-crash';
    const wait = 3_000;
    const fleet = harness.fleet({
      url: harness.redis.url, stream, group: 'g', ledger: 'runs',
      recovery: { minIdleTime: 60_000, retry: { type: 'fixed', delay: wait } },
    });
    // Both workers run before the entry exists (spawning may take longer than the wait on a busy machine).
    const workers = await Promise.all([fleet.spawn(), fleet.spawn()]);
    const id = (await harness.client.xadd(stream, '*', 'pattern', stream, 'data', JSON.stringify({ n: 1, kind: 'flaky', failures: 1 }))) as string;
    await waitFor(async () => (await pendingRows(harness.client, stream, 'g'))[0]?.consumer === 'retry', 'the failed entry released to the retry consumer');
    const [failed] = await runs('runs');
    const first = workers.find((worker) => worker.consumer === failed?.consumer);
    const second = workers.find((worker) => worker !== first);
    await fleet.kill(first);
    await waitFor(async () => (await runs('runs')).some((run) => run.outcome === 'ok'), 'the retry', { timeout: 20_000 });
    await waitFor(async () => (await pendingRows(harness.client, stream, 'g')).length === 0, 'the ack');
    const [, retried] = await runs('runs');
    expect([failed?.id, failed?.deliveryCount, failed?.outcome]).toEqual([id, 1, 'fail']);
    expect([retried?.id, retried?.deliveryCount, retried?.consumer, retried?.outcome]).toEqual([id, 2, second?.consumer, 'ok']);
    const gap = (retried?.at ?? 0) - (failed?.at ?? 0);
    expect(gap).toBeGreaterThanOrEqual(wait);
    expect(gap).toBeLessThan(wait + 10_000); // on schedule: minIdleTime (60 s) would be far later
    expect(await harness.client.llen('runs')).toBe(2);
  }, 60_000);
});
