import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { permitKeys } from '../../src/flow/flow-keys.js';
import type { WorkPayload } from '../fixtures/recovery-worker.js';
import { pendingCount } from '../helpers/stream-state.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';
import { WorkerFleet } from '../helpers/worker-fleet.js';

/**
 * Flow control (extras.rateLimit, extras.globalConcurrency) with worker processes
 * (test/fixtures/recovery-worker.ts): a worker killed while it holds permits, Redis killed and
 * restarted from its AOF, workers whose clocks are an hour apart. Each worker records
 * `<id>:<deliveryCount>:<consumer>[...]` in a Redis list inside its handler.
 */
describe('flow control under faults (worker processes, real redis-server)', () => {
  const redis = useRedisServer({ appendOnly: true });
  const fleets: WorkerFleet[] = [];
  let run = 0;
  beforeAll(ensureCompiled, 240_000);
  afterEach(async () => {
    await Promise.all(fleets.splice(0).map((fleet) => fleet.stop()));
  });

  function fleetFor(config: Record<string, unknown>): { fleet: WorkerFleet; stream: string; ledger: string } {
    run++;
    const stream = `flow${run}`;
    const ledger = `flow-ledger${run}`;
    const fleet = new WorkerFleet({ url: redis.server.url, stream, group: 'g', ledger, ...config });
    fleets.push(fleet);
    return { fleet, stream, ledger };
  }

  async function publish(stream: string, payloads: WorkPayload[]): Promise<string[]> {
    const ids: string[] = [];
    for (const payload of payloads) ids.push((await redis.client.xadd(stream, '*', 'pattern', stream, 'data', JSON.stringify(payload))) as string);
    return ids;
  }

  async function handledIds(ledger: string): Promise<Set<string>> {
    return new Set((await redis.client.lrange(ledger, 0, -1)).filter((line) => !line.endsWith(':start')).map((line) => line.split(':')[0] as string));
  }

  async function permitsHeld(stream: string): Promise<Record<string, string>> {
    return (await redis.client.hgetall(permitKeys(stream, 'g').holders)) as Record<string, string>;
  }

  it('kill -9 of a worker holding global-concurrency permits: they come back when its lease runs out, and nothing is lost', async () => {
    const { fleet, stream, ledger } = fleetFor({ extras: { globalConcurrency: { max: 2, lease: 1_500 } }, recovery: { minIdleTime: 2_000 } });
    await redis.client.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const doomed = await fleet.spawn();
    // Both entries are read at once (2 permits); the first handler kills its process.
    const crashing = await publish(stream, [{ n: 0, kind: 'crash' }, { n: 1, kind: 'crash' }]);
    await doomed.exited;
    expect(await permitsHeld(stream)).toEqual({ [doomed.consumer]: '2' });

    const survivor = await fleet.spawn();
    const later = await publish(stream, [0, 1, 2, 3].map((n) => ({ n: 10 + n, kind: 'ok' as const })));
    await waitFor(async () => [...crashing, ...later].every((id) => handledIds(ledger).then((ids) => ids.has(id))), 'every entry handled by the survivor', {
      timeout: 20_000,
    });
    await waitFor(async () => (await pendingCount(redis.client, stream, 'g')) === 0, 'nothing pending');
    const holders = await permitsHeld(stream);
    expect(holders[doomed.consumer]).toBeUndefined();
    expect(Number(holders[survivor.consumer] ?? 0)).toBeLessThanOrEqual(2);
  });

  it('Redis killed and restarted from its AOF mid-run: every entry handled, permits never over the limit, none left held', async () => {
    const { fleet, stream, ledger } = fleetFor({
      extras: { globalConcurrency: { max: 3, lease: 2_000 }, rateLimit: { max: 100, per: 1_000 } },
      sleepMs: [5, 20],
      recovery: { minIdleTime: 2_000 },
    });
    await redis.client.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    await fleet.spawn();
    await fleet.spawn();
    const ids = await publish(stream, Array.from({ length: 80 }, (_, n) => ({ n, kind: 'ok' as const })));
    await waitFor(async () => (await redis.client.llen(ledger)) >= 10, 'work under way');
    await redis.server.restart();
    let mostHeld = 0;
    await waitFor(
      async () => {
        const held = Object.values(await permitsHeld(stream)).reduce((sum, count) => sum + Number(count), 0);
        mostHeld = Math.max(mostHeld, held);
        const handled = await handledIds(ledger);
        return ids.every((id) => handled.has(id));
      },
      'every entry handled after the restart',
      { timeout: 30_000, interval: 20 },
    );
    await waitFor(async () => (await pendingCount(redis.client, stream, 'g')) === 0, 'nothing pending');
    expect(mostHeld).toBeLessThanOrEqual(3);
    // An acquire Redis ran before the kill and again when ioredis resent it counts permits the
    // worker never got: once idle, the worker states it holds none (test/flow/global-concurrency-faults.spec.ts).
    await waitFor(async () => Object.keys(await permitsHeld(stream)).length === 0, 'no permit left held');
  });

  /** How late a handler's stamp of Redis' clock may come after its grant, on a loaded machine. */
  const STAMP_SLACK_MS = 250;

  it('workers whose clocks are an hour apart share one rate limit: Redis\' clock decides', async () => {
    const max = 10;
    const perMs = 500;
    const { fleet, stream, ledger } = fleetFor({ extras: { rateLimit: { max, per: perMs } } });
    await redis.client.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    await fleet.spawn({ clockSkewMs: 3_600_000 });
    await fleet.spawn({ clockSkewMs: -3_600_000 });
    const published = 40;
    await publish(stream, Array.from({ length: published }, (_, n) => ({ n, kind: 'flaky' as const, failures: 0 })));
    await waitFor(async () => (await redis.client.llen(ledger)) === published, 'every entry handled', { timeout: 20_000 });
    // `<id>:<count>:<consumer>:<Redis ms at the handler's start>:ok`
    const lines = await redis.client.lrange(ledger, 0, -1);
    const times = lines.map((line) => Number(line.split(':')[3])).sort((a, b) => a - b);
    expect(new Set(lines.map((line) => line.split(':')[2])).size).toBe(2);
    for (let i = 0; i < times.length; i++) {
      for (let j = i; j < times.length; j++) {
        const span = (times[j] as number) - (times[i] as number);
        expect(j - i + 1).toBeLessThanOrEqual(max + Math.floor((max * (span + STAMP_SLACK_MS)) / perMs));
      }
    }
  });
});
