import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { HISTORY_POINTS, StreamHistory, type SeriesView } from '../../src/dashboard/stream-history.js';
import { OVERVIEW_GROUPS } from '../../src/dashboard/overview-bounds.js';
import { resolveDashboardOptions } from '../../src/dashboard/dashboard.options.js';
import { deadLetterKey } from '../../src/redis/keys.js';
import { AUDIT_GROUP, seedStream } from '../helpers/dashboard-app.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { samplesAfter, seriesOf } from '../helpers/dashboard-series.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/** The charts' samples: kept by the module on its own timer, bounded, equal to what Redis had, and no Redis command per tab (the page's charts: dashboard-charts-browser.spec.ts). */
const STREAM = 'charted';

/** Σ rate × seconds between samples: what a rate series says was added (or read) in all. */
function integrate(view: SeriesView, rates: (number | null)[]): number {
  let total = 0;
  rates.forEach((rate, index) => {
    if (rate !== null) total += (rate * (view.at[index]! - view.at[index - 1]!)) / 1000;
  });
  return total;
}

/** MONITOR on a plain socket (each command Redis runs, as its quoted arguments, to `seen`). */
async function monitorRedis(port: number, seen: (args: string[]) => void): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let buffered = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\r\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      // +1700000000.000000 [0 127.0.0.1:5000] "XINFO" "STREAM" "charted"
      if (!line.startsWith('+') || line === '+OK') continue;
      seen([...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((match) => match[1]!));
    }
  });
  socket.write('MONITOR\r\n');
  await waitFor(() => buffered.startsWith('+OK') || buffered === '', 'MONITOR to start');
  return socket;
}

describe('dashboard charts: the samples the module keeps (Express and Fastify)', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  it('samples in/s, out/s, lag, pending and dead letters as Redis has them', async () => {
    for (const adapter of ['express', 'fastify'] as const) {
      await seedStream(redis.client, STREAM, { entries: 10, pending: 3, deadLetters: 2 });
      const app = await dashboard.start({ streams: [STREAM], sampleInterval: 500 }, adapter);
      const first = await samplesAfter(app, STREAM, 0, 2);
      const groups = (await redis.client.xinfo('GROUPS', STREAM)) as unknown[][];
      const audit = Object.fromEntries(Array.from({ length: groups[0]!.length / 2 }, (_, n) => [groups[0]![2 * n], groups[0]![2 * n + 1]])) as Record<string, number>;
      const group = first.groups.find((one) => one.name === AUDIT_GROUP)!;
      expect(first.deadLetters.at(-1)).toBe(await redis.client.xlen(deadLetterKey(STREAM)));
      expect(first.deadLetters.at(-1)).toBe(2);
      expect(group.pending.at(-1)).toBe(Number(audit.pending));
      expect(group.pending.at(-1)).toBe(3);
      // Counters of Redis 7.0+ (entries-added, entries-read, lag): none before, so no rates and no lag.
      const counters = audit['entries-read'] !== undefined;
      // 10 entries, 5 read into the group: lag 5.
      expect(group.lag.at(-1)).toBe(counters ? 5 : null);
      expect(Number(audit.lag ?? 5)).toBe(5);
      expect(first.inRate.at(-1)).toBe(counters ? 0 : null);

      // 7 added and 4 read between samples: the rates, over their intervals, add up to exactly that.
      const before = first.at.length;
      const pipeline = redis.client.multi();
      for (let n = 0; n < 7; n++) pipeline.xadd(STREAM, '*', 'n', String(n));
      await pipeline.exec();
      await redis.client.xreadgroup('GROUP', AUDIT_GROUP, 'audit-2', 'COUNT', 4, 'STREAMS', STREAM, '>');
      const later = await samplesAfter(app, STREAM, before, 2);
      const laterGroup = later.groups.find((one) => one.name === AUDIT_GROUP)!;
      expect(integrate(later, later.inRate)).toBeCloseTo(counters ? 7 : 0, 6);
      expect(integrate(later, laterGroup.outRate)).toBeCloseTo(counters ? 4 : 0, 6);
      expect(laterGroup.pending.at(-1)).toBe(7);
      expect(laterGroup.lag.at(-1)).toBe(counters ? 17 - 9 : null);
      expect(later.intervalMs).toBe(500);
      await dashboard.close();
      await redis.client.flushall();
    }
  }, 60_000);

  it(`keeps at most ${HISTORY_POINTS} samples a series and ${OVERVIEW_GROUPS} groups a stream, counted`, async () => {
    const pipeline = redis.client.pipeline();
    pipeline.xadd(STREAM, '*', 'n', '1');
    for (let group = 0; group < OVERVIEW_GROUPS + 5; group++) pipeline.xgroup('CREATE', STREAM, `g${String(group).padStart(2, '0')}`, '0');
    await pipeline.exec();
    for (const bad of [100, -1, 1.5, '10000']) expect(() => resolveDashboardOptions({ sampleInterval: bad as number })).toThrow(/sampleInterval/);
    expect(resolveDashboardOptions({ sampleInterval: 0 }).sampleInterval).toBe(0);
    // An hour between timer ticks: only the samples taken below.
    const app = await dashboard.start({ streams: [STREAM], sampleInterval: 3_600_000 });
    const history = app.app.get(StreamHistory);
    for (let n = 0; n < HISTORY_POINTS + 40; n++) await history.sample();
    const kept = (await seriesOf(app, STREAM))!;
    expect(kept.at).toHaveLength(HISTORY_POINTS);
    expect(kept.inRate).toHaveLength(HISTORY_POINTS);
    expect(kept.groups).toHaveLength(OVERVIEW_GROUPS);
    for (const group of kept.groups) expect(group.pending).toHaveLength(HISTORY_POINTS);
    // The test app's handler stream (dash-orders, group billing) and this one: 2 + 3 a group each.
    expect(history.seriesCount()).toBe(2 + 3 * 1 + 2 + 3 * OVERVIEW_GROUPS);
    // Oldest first, one sample apart.
    expect(kept.at.every((at, index) => index === 0 || at >= kept.at[index - 1]!)).toBe(true);
  }, 60_000);

  it('costs Redis the same with two tabs reading the charts as with none: one sampling a tick (counted with MONITOR)', async () => {
    await seedStream(redis.client, STREAM, { entries: 3, pending: 1, deadLetters: 0 });
    // The shortest interval (500 ms): room enough for the test (polling every 20 ms) to read the counts between two samples.
    await dashboard.start({ streams: [STREAM], sampleInterval: 500 });
    const commands: string[] = [];
    const monitor = await monitorRedis(redis.server.port, (args) => {
      if (args.includes(STREAM) || args.includes(deadLetterKey(STREAM))) commands.push(args.slice(0, 2).join(' ').toLowerCase());
    });
    try {
      /** Commands on the stream over `ticks` samples, from right after one sample to right after another. */
      const window = async (ticks: number, during: () => Promise<void>) => {
        const start = (await samplesAfter(dashboard.app, STREAM, (await samplesAfter(dashboard.app, STREAM, 0)).at.length)).at.length;
        const from = commands.length;
        await during();
        const end = (await samplesAfter(dashboard.app, STREAM, start, ticks)).at.length;
        // A sample's commands are in MONITOR's feed before its answers reach the app.
        return { commands: commands.slice(from, commands.length), ticks: end - start };
      };
      const idle = await window(3, async () => {});
      let requests = 0;
      let polling = true;
      const tab = async () => {
        while (polling) {
          expect(await seriesOf(dashboard.app, STREAM)).not.toBeNull();
          requests++;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      };
      const tabs = [tab(), tab()];
      const busy = await window(3, async () => {});
      polling = false;
      await Promise.all(tabs);
      const perTick = ['xinfo stream', 'xinfo groups', `xlen ${deadLetterKey(STREAM)}`.toLowerCase()];
      // Three commands a sample, with or without tabs reading the charts: the route reads memory only.
      expect(idle.commands.length).toBe(idle.ticks * perTick.length);
      expect(busy.commands.length).toBe(busy.ticks * perTick.length);
      expect(new Set(busy.commands)).toEqual(new Set(perTick));
      expect(requests).toBeGreaterThan(20);
    } finally {
      monitor.destroy();
    }
  }, 60_000);
});
