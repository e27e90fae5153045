import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/index.js';
import { pendingRows } from '../helpers/stream-state.js';
import type { WorkPayload } from '../fixtures/recovery-worker.js';
import { useWorkerFleets } from '../helpers/use-worker-fleets.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Progress and kept results across a worker's kill -9 (test/fixtures/recovery-worker.ts, kind
 * `progress`): the first delivery reports progress and hangs until it is killed; recovery gives
 * the entry to another worker, whose delivery reports other progress and returns a value.
 */
describe('entry lifecycle across a worker kill -9 (real redis-server, worker processes)', () => {
  const harness = useWorkerFleets();
  let client: RedisStreamsClient | undefined;

  afterEach(async () => {
    await client?.close();
    client = undefined;
  });

  it("the retry's progress replaces the killed delivery's; the kept result is the final delivery's", async () => {
    const stream = 'lifecycle-crash';
    await harness.client.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const payload: WorkPayload = { n: 7, kind: 'progress' };
    const id = (await harness.client.xadd(stream, '*', 'pattern', stream, 'data', JSON.stringify(payload))) as string;
    const fleet = harness.fleet({
      url: harness.redis.url, stream, group: 'g', ledger: 'lifecycle-ledger',
      recovery: { minIdleTime: 400, interval: 100 },
      extras: { keepResults: { ttl: 60_000 } },
    });
    client = new RedisStreamsClient({ connection: harness.redis.url });

    const victim = await fleet.spawn();
    await waitFor(async () => (await harness.client.lrange('lifecycle-ledger', 0, -1)).includes(`${id}:1:${victim.consumer}:start`), 'the first delivery started', { timeout: 20_000 });
    expect(await client.progress(stream, id)).toMatchObject({ value: { n: 7, delivery: 1, step: 'started' }, delivery: 1 });
    expect(await client.result(stream, id)).toBeNull();

    await fleet.kill(victim);
    const waited = client.result(stream, id, { wait: 30_000 });
    const survivor = await fleet.spawn();
    const result = await waited;
    expect(result).toMatchObject({ state: 'done', value: { n: 7, delivery: 2 }, delivery: 2 });

    expect(await client.progress(stream, id)).toMatchObject({ value: { n: 7, delivery: 2, step: 'finished' }, delivery: 2 });
    expect(await harness.client.lrange('lifecycle-ledger', 0, -1)).toEqual([`${id}:1:${victim.consumer}:start`, `${id}:2:${survivor.consumer}`]);
    await waitFor(async () => (await pendingRows(harness.client, stream, 'g')).length === 0, 'nothing pending', { timeout: 10_000 });
    const status = await client.entryStatus(stream, id);
    expect([status.state, status.progress?.delivery, status.result]).toEqual(['done', 2, expect.objectContaining({ state: 'done', delivery: 2 })]);
    expect(await harness.client.xlen(`{${stream}}:dead`)).toBe(0);
  }, 90_000);
});
