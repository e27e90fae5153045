import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { RedisStreamsScheduler } from '../../src/client/redis-streams-scheduler.js';
import type { DelayedListView } from '../../src/dashboard/dashboard-reads.js';
import { holdEntry, holdHead } from '../../src/delayed/hold.js';
import { hourHalfADayAfter } from '../helpers/cron-far-from-now.js';
import { type DashboardApp } from '../helpers/dashboard-app.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/** The app's guard of the tests: lets a request on when it carries `x-operator: yes`. */
@Injectable()
class OperatorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-operator'] === 'yes';
  }
}

const OPERATOR = { 'x-operator': 'yes' };
const ADAPTERS = ['express', 'fastify'] as const;
/** No handler of the test app reads it: its delayed entries stay held until promoted by hand. */
const STREAM = 'dl';
const SCHEDULE = '{dl}:delayed';

async function get(url: string): Promise<{ status: number; text: string }> {
  const response = await fetch(url, { headers: OPERATOR, signal: AbortSignal.timeout(5_000) });
  return { status: response.status, text: await response.text() };
}

async function post(url: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, { method: 'POST', headers: { ...OPERATOR, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal: AbortSignal.timeout(5_000) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function list(app: DashboardApp, path: string, cursor?: string | null): Promise<DelayedListView> {
  const reply = await get(`${app.page}/api/${path}?stream=${STREAM}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
  expect(reply.status, reply.text).toBe(200);
  return JSON.parse(reply.text) as DelayedListView;
}

/** Every page of `path`, following `next` until it is null. */
async function pages(app: DashboardApp, path: string): Promise<DelayedListView[]> {
  const all: DelayedListView[] = [];
  let cursor: string | null | undefined;
  do {
    const page = await list(app, path, cursor);
    all.push(page);
    cursor = page.next;
    expect(all.length).toBeLessThan(10);
  } while (cursor !== null);
  return all;
}

describe('dashboard delayed entries and recurring schedules (Express and Fastify)', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  /** 60 entries due first at the same time (ties: ordered by hold id), one with a 10 KB value, 60 due one by one, an hourly and a nightly schedule. */
  async function seed(): Promise<string> {
    // About half a day from now: its next run never falls among the held entries (all due within 15 minutes).
    const nightly = `0 ${hourHalfADayAfter(Date.now(), 'Europe/Berlin')} * * *`;
    const client = new RedisStreamsClient({ connection: redis.server.url });
    try {
      const emit = (data: unknown, options: ConstructorParameters<typeof RedisStreamsRecord>[1]) => lastValueFrom(client.emit(STREAM, new RedisStreamsRecord(data, options)));
      const together = new Date(Date.now() + 600_000);
      for (let i = 0; i < 60; i++) await emit({ n: i }, { deliverAt: together });
      for (let i = 0; i < 60; i++) await emit({ n: 100 + i }, { delay: 800_000 + i * 1000 });
      await emit({ big: 'x'.repeat(10_000) }, { delay: 700_000 });
      const scheduler = new RedisStreamsScheduler(client);
      await scheduler.schedule(STREAM, { report: 'hourly' }, { every: 'PT1H', key: 'hourly' });
      await scheduler.schedule(STREAM, { report: 'nightly' }, { cron: nightly, timezone: 'Europe/Berlin', key: 'nightly' });
      return nightly;
    } finally {
      await client.close();
    }
  }

  it('pages the held entries 50 at a time by due time from a cursor, each once and in order, with bounded previews; and the schedules', async () => {
    const nightlyRule = await seed();
    const held = await redis.client.zrange(SCHEDULE, 0, -1);
    expect(held).toHaveLength(123);
    for (const adapter of ADAPTERS) {
      const app = await dashboard.start({ streams: [STREAM] }, adapter);
      const delayed = await pages(app, 'delayed');
      expect(delayed.map((page) => [page.entries.length, page.total, page.more])).toEqual([[50, 123, true], [50, 123, true], [23, 123, false]]);
      expect(delayed.flatMap((page) => page.entries.map((entry) => entry.hold))).toEqual(held);
      const big = delayed[1]!.entries[10];
      expect(big!.dueAt).toBe(new Date(Number(await redis.client.zscore(SCHEDULE, big!.hold))).toISOString());
      const data = big!.fields!.find(([name]) => name.text === 'data')![1];
      expect(data).toMatchObject({ encoding: 'utf8', bytes: 10_010, truncated: true });
      expect(data.text).toHaveLength(1024);

      // A cursor stays where it was while entries before it go, its own included (among 60 due at the same ms): the next page starts after it.
      if (adapter === 'fastify') {
        expect(delayed[0]!.next).toBe(`${await redis.client.zscore(SCHEDULE, held[49]!)}:${held[49]}`);
        expect(await redis.client.zrem(SCHEDULE, ...held.slice(0, 10), held[49]!)).toBe(11);
        const second = await list(app, 'delayed', delayed[0]!.next);
        expect([second.entries[0]!.hold, second.total]).toEqual([held[50], 112]);
        expect(second.entries.map((entry) => entry.hold)).toEqual(held.slice(50, 100));
      }

      const schedules = await pages(app, 'schedules');
      expect(schedules).toHaveLength(1);
      expect(schedules[0]!.total).toBe(2);
      const [hourly, nightly] = [...schedules[0]!.entries].sort((a, b) => a.hold.localeCompare(b.hold));
      expect(hourly).toMatchObject({ hold: 'repeat:hourly', everyMs: 3_600_000, cron: null });
      expect(nightly).toMatchObject({ hold: 'repeat:nightly', everyMs: null, cron: { expression: nightlyRule, timezone: 'Europe/Berlin' } });
      expect(nightly!.cron!.nextRuns).toHaveLength(5);
      expect(nightly!.cron!.nextRuns[0]).toBe(nightly!.dueAt);
      const runs = nightly!.cron!.nextRuns.map((at) => new Date(at).getTime());
      expect(runs).toEqual([...runs].sort((a, b) => a - b));
      expect(new Set(runs).size).toBe(5);
      expect(runs.map((ms) => new Date(ms).toLocaleTimeString('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }))).toEqual(Array(5).fill(`${nightlyRule.split(' ')[1]!.padStart(2, '0')}:00`));
      expect(hourly!.fields!.map(([name, value]) => [name.text, value.text])).toContainEqual(['data', '{"report":"hourly"}']);

      const bad = await get(`${app.page}/api/delayed?stream=${STREAM}&cursor=50`);
      expect(bad.status).toBe(400);
      expect(bad.text).toContain('cursor');
      await dashboard.close();
    }
  });

  it('pages the recurring schedules 50 at a time in due order, and shows field bytes that are not UTF-8 as marked base64', async () => {
    const client = new RedisStreamsClient({ connection: redis.server.url });
    try {
      const scheduler = new RedisStreamsScheduler(client);
      for (let i = 0; i < 55; i++) await scheduler.schedule(STREAM, { n: i }, { every: 60_000 + i * 1000, key: `s${i}` });
    } finally {
      await client.close();
    }
    const xadd = { noMkStream: false, trim: 'none', operator: '~', amount: 0, onlyAcked: false } as const;
    await holdEntry(redis.client, STREAM, [...holdHead('raw', { mode: 'in', ms: 900_000 }, xadd), 'blob', Buffer.from([0xff, 0x00, 0xfe])]);
    const inDueOrder = (await redis.client.zrange(SCHEDULE, 0, -1)).filter((hold) => hold !== 'raw');
    for (const adapter of ADAPTERS) {
      const app = await dashboard.start({ streams: [STREAM] }, adapter);
      const schedules = await pages(app, 'schedules');
      expect(schedules.map((page) => [page.entries.length, page.total])).toEqual([[50, 55], [5, 55]]);
      expect(schedules.flatMap((page) => page.entries.map((entry) => entry.hold))).toEqual(inDueOrder);
      const raw = (await pages(app, 'delayed')).flatMap((page) => page.entries).find((entry) => entry.hold === 'raw');
      expect(raw!.fields).toEqual([[{ text: 'blob', encoding: 'utf8', bytes: 4, truncated: false }, { text: Buffer.from([0xff, 0x00, 0xfe]).toString('base64'), encoding: 'base64', bytes: 3, truncated: false }]]);
      await dashboard.close();
    }
  });

  it('promotes a held entry now and removes an entry and a schedule, behind the CSRF token; refuses both when read-only; logs each', async () => {
    for (const adapter of ADAPTERS) {
      await seed();
      const readOnly = await dashboard.start({ streams: [STREAM] }, adapter);
      try {
        const [hold] = await redis.client.zrange(SCHEDULE, 0, 0);
        for (const [path, body] of [['delayed/promote', { stream: STREAM, hold }], ['delayed/remove', { stream: STREAM, holds: [hold] }]] as const) {
          const refused = await post(`${readOnly.page}/api/${path}`, body, {});
          expect(refused.status, path).toBe(403);
          expect(refused.body.message).toMatch(/read-only/);
        }
        expect(await redis.client.zcard(SCHEDULE)).toBe(123);
      } finally {
        await readOnly.close();
      }

      const app = await dashboard.start({ readOnly: false, guard: OperatorGuard, streams: [STREAM] }, adapter);
      const session = JSON.parse((await get(`${app.page}/api/session`)).text) as { csrfToken: string };
      const headers = { 'x-csrf-token': session.csrfToken };
      const [first, second] = (await list(app, 'delayed')).entries;
      expect((await post(`${app.page}/api/delayed/promote`, { stream: STREAM, hold: first!.hold }, {})).status).toBe(403);
      expect(await redis.client.xlen(STREAM)).toBe(0);

      const promoted = await post(`${app.page}/api/delayed/promote`, { stream: STREAM, hold: first!.hold }, headers);
      expect(promoted.status).toBe(200);
      const [[id, fields]] = (await redis.client.xrange(STREAM, '-', '+')) as [[string, string[]]];
      expect(promoted.body).toMatchObject({ stream: STREAM, hold: first!.hold, promoted: [{ hold: first!.hold, id }], skipped: [] });
      expect(fields).toEqual(first!.fields!.flatMap(([name, value]) => [name.text, value.text]));
      expect(await redis.client.zscore(SCHEDULE, first!.hold)).toBeNull();
      expect(await redis.client.xlen(STREAM)).toBe(1);
      // A hold that is gone is not held again.
      expect((await post(`${app.page}/api/delayed/promote`, { stream: STREAM, hold: first!.hold }, headers)).body).toMatchObject({ promoted: [] });
      expect(await redis.client.zscore(SCHEDULE, first!.hold)).toBeNull();

      expect((await post(`${app.page}/api/delayed/remove`, { stream: STREAM, holds: [second!.hold] }, headers)).body).toEqual({ stream: STREAM, requested: 1, removed: 1 });
      expect((await post(`${app.page}/api/delayed/remove`, { stream: STREAM, holds: ['repeat:nightly'] }, headers)).body).toEqual({ stream: STREAM, requested: 1, removed: 1 });
      expect(await redis.client.zscore(SCHEDULE, second!.hold)).toBeNull();
      expect(await redis.client.hexists('{dl}:delayed-bodies', 'repeat:nightly')).toBe(0);
      expect((await list(app, 'schedules')).entries.map((entry) => entry.hold)).toEqual(['repeat:hourly']);
      expect((await list(app, 'delayed')).total).toBe(120);
      expect(await redis.client.xlen(STREAM)).toBe(1);

      const bad = await post(`${app.page}/api/delayed/remove`, { stream: STREAM, holds: [] }, headers);
      expect(bad.status).toBe(400);
      expect(bad.body.message).toMatch(/holds/);
      expect((await post(`${app.page}/api/delayed/promote`, { stream: STREAM, hold: 7 }, headers)).status).toBe(400);
      // An entry emitted with NOMKSTREAM to a stream that does not exist is dropped, and says so.
      const xadd = { noMkStream: true, trim: 'none', operator: '~', amount: 0, onlyAcked: false } as const;
      await holdEntry(redis.client, 'nomk', [...holdHead('orphan', { mode: 'in', ms: 900_000 }, xadd), 'n', '1']);
      expect((await post(`${app.page}/api/delayed/promote`, { stream: 'nomk', hold: 'orphan' }, headers)).body).toEqual({ stream: 'nomk', hold: 'orphan', promoted: [], skipped: [{ hold: 'orphan', status: 'dropped' }] });
      expect(await redis.client.exists('nomk', '{nomk}:delayed')).toBe(0);

      expect(app.logger.lines.filter((line) => /^(promote|remove) delayed/.test(line))).toEqual([
        `promote delayed entry: stream "dl", hold ${JSON.stringify(first!.hold)}: promoted, 1 in all`,
        `promote delayed entry: stream "dl", hold ${JSON.stringify(first!.hold)}: not held any more, 0 other due promoted`,
        `remove delayed entries: stream "dl", holds [${JSON.stringify(second!.hold)}]: 1 removed of 1`,
        'remove delayed entries: stream "dl", holds ["repeat:nightly"]: 1 removed of 1',
        'promote delayed entry: stream "nomk", hold "orphan": not promoted: dropped, 0 other due promoted',
      ]);
      expect(app.logger.lines.join('\n')).not.toContain('xxxxxxxx');
      await dashboard.close();
      await redis.client.flushall();
    }
  });
});
