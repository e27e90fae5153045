import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import type { EntriesView, EntryView } from '../../src/dashboard/entry-reads.js';
import { progressKey, resultKey } from '../../src/lifecycle/lifecycle-keys.js';
import { encodeRecord } from '../../src/lifecycle/lifecycle-records.js';
import { deadLetterKey } from '../../src/redis/keys.js';
import { AUDIT_GROUP, type DashboardApp } from '../helpers/dashboard-app.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { ADAPTERS, AllowOperators, csrfToken, getJson, postJson } from '../helpers/dashboard-http.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/** The first entry's ms: entry n has id `${BASE + n}-0`, added at BASE + n ms. */
const BASE = 1_767_000_000_000;
const STREAM = 'ledger';

/** A read of the dashboard's API, its answer typed as the view or an error's message. */
const get = <T>(app: DashboardApp, path: string, params: Record<string, string>) => getJson<T & { message?: string }>(app, path, params);
/** A mutation with the session's CSRF token. */
const post = async (app: DashboardApp, path: string, body: unknown) => postJson(app, path, body, await csrfToken(app));

const ids = (from: number, to: number): string[] => Array.from({ length: to - from }, (_, n) => `${BASE + from + n}-0`);

describe('dashboard entries list and entry view over HTTP (Express and Fastify)', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  async function seed(count: number): Promise<void> {
    const pipeline = redis.client.pipeline();
    for (let n = 0; n < count; n++) pipeline.xadd(STREAM, `${BASE + n}-0`, 'pattern', STREAM, 'data', JSON.stringify({ n }));
    await pipeline.exec();
  }

  it('pages a stream newest or oldest first with a cursor, with its length and the count of a range when one page holds it', async () => {
    await seed(120);
    for (const adapter of ADAPTERS) {
      const app = await dashboard.start({}, adapter);
      const pageIds = (view: EntriesView) => view.entries.map((entry) => entry.id);

      // Newest first (the default): 50, 50, 20, each page after the previous one's last id.
      const first = await get<EntriesView>(app, 'entries', { stream: STREAM });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ order: 'newest', total: 120, rangeCount: 120, range: null, next: `(${BASE + 70}-0`, more: true });
      expect(pageIds(first.body)).toEqual(ids(70, 120).reverse());
      expect(first.body.entries[0]!.fields).toEqual([
        [{ text: 'pattern', encoding: 'utf8', bytes: 7, truncated: false }, { text: STREAM, encoding: 'utf8', bytes: 6, truncated: false }],
        [{ text: 'data', encoding: 'utf8', bytes: 4, truncated: false }, { text: '{"n":119}', encoding: 'utf8', bytes: 9, truncated: false }],
      ]);
      const second = await get<EntriesView>(app, 'entries', { stream: STREAM, cursor: first.body.next! });
      expect(pageIds(second.body)).toEqual(ids(20, 70).reverse());
      const third = await get<EntriesView>(app, 'entries', { stream: STREAM, cursor: second.body.next! });
      expect(pageIds(third.body)).toEqual(ids(0, 20).reverse());
      expect(third.body).toMatchObject({ next: null, more: false });

      // Oldest first.
      const oldest = await get<EntriesView>(app, 'entries', { stream: STREAM, order: 'oldest' });
      expect(pageIds(oldest.body)).toEqual(ids(0, 50));
      const oldestNext = await get<EntriesView>(app, 'entries', { stream: STREAM, order: 'oldest', cursor: oldest.body.next! });
      expect(pageIds(oldestNext.body)).toEqual(ids(50, 100));

      // A time range is the id range of those ms: one page holds it, so its count is known.
      const byTime = await get<EntriesView>(app, 'entries', { stream: STREAM, order: 'oldest', from: new Date(BASE + 10).toISOString(), to: new Date(BASE + 19).toISOString() });
      expect(pageIds(byTime.body)).toEqual(ids(10, 20));
      expect(byTime.body).toMatchObject({ total: 120, rangeCount: 10, next: null, range: { from: `${BASE + 10}-0`, to: `${BASE + 19}-18446744073709551615` } });
      // A time without a zone is UTC, whatever the server's zone (Node reads TZ when it changes).
      const noZone = new Date(BASE + 10).toISOString().slice(0, -1);
      const zone = process.env.TZ;
      process.env.TZ = 'America/New_York';
      try {
        expect((await get<EntriesView>(app, 'entries', { stream: STREAM, from: noZone, to: noZone })).body.range).toEqual({ from: `${BASE + 10}-0`, to: `${BASE + 10}-18446744073709551615` });
      } finally {
        if (zone === undefined) delete process.env.TZ;
        else process.env.TZ = zone;
      }
      // A leap day and a month's last day are days of their month: the range is theirs.
      expect((await get<EntriesView>(app, 'entries', { stream: STREAM, from: '2024-02-29', to: '2026-12-31T23:59:59.999Z' })).body.range).toEqual({
        from: `${Date.UTC(2024, 1, 29)}-0`,
        to: `${Date.UTC(2026, 11, 31, 23, 59, 59, 999)}-18446744073709551615`,
      });
      // An id range of more than a page: not counted (Redis cannot without reading it all), paged within the range.
      const byId = await get<EntriesView>(app, 'entries', { stream: STREAM, from: `${BASE + 5}-0`, to: String(BASE + 64) });
      expect(byId.body).toMatchObject({ total: 120, rangeCount: null, more: true });
      expect(pageIds(byId.body)).toEqual(ids(15, 65).reverse());
      const byIdNext = await get<EntriesView>(app, 'entries', { stream: STREAM, from: `${BASE + 5}-0`, to: String(BASE + 64), cursor: byId.body.next! });
      expect(pageIds(byIdNext.body)).toEqual(ids(5, 15).reverse());
      expect(byIdNext.body).toMatchObject({ next: null, rangeCount: null });

      // A stream that is not there: empty, nothing in all.
      expect((await get<EntriesView>(app, 'entries', { stream: 'nothing-here' })).body).toMatchObject({ total: 0, rangeCount: 0, entries: [], next: null });
      await dashboard.close();
    }
  });

  it('answers 400 naming the parameter for a bad order, id, time or cursor', async () => {
    await seed(3);
    for (const adapter of ADAPTERS) {
      const app = await dashboard.start({}, adapter);
      const cases: [Record<string, string>, string][] = [
        [{ stream: STREAM, order: 'sideways' }, 'order'],
        [{ stream: STREAM, from: 'yesterday' }, 'from'],
        [{ stream: STREAM, to: '12-x' }, 'to'],
        [{ stream: STREAM, from: '2026-13-45T99:00:00Z' }, 'from'],
        // Days their month lacks (Date.parse made them 1 March, 1 May, 3 March): refused, not moved on.
        [{ stream: STREAM, from: '2026-02-29' }, 'from'],
        [{ stream: STREAM, to: '2026-04-31' }, 'to'],
        [{ stream: STREAM, from: '2026-02-31T10:00:00Z' }, 'from'],
        [{ stream: STREAM, from: String(BASE + 2), to: String(BASE + 1) }, 'to'],
        [{ stream: STREAM, cursor: '1-0' }, 'cursor'],
        [{ stream: '' }, 'stream'],
      ];
      for (const [params, option] of cases) {
        const reply = await get<EntriesView>(app, 'entries', params);
        expect(reply.status, JSON.stringify(params)).toBe(400);
        expect(reply.body.message, JSON.stringify(params)).toContain(`Invalid option "${option}"`);
      }
      await dashboard.close();
    }
  });

  it('shows an entry with its headers, trace id and per-group delivery, then from its dead letter once cancelled, and 404 once gone', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const headers = JSON.stringify({ traceparent: `00-${traceId}-00f067aa0ba902b7-01`, tenant: 'acme' });
    const id = await redis.client.xadd(STREAM, '*', 'pattern', STREAM, 'data', '{"order":7}', 'headers', headers);
    await redis.client.xgroup('CREATE', STREAM, AUDIT_GROUP, '0');
    await redis.client.xgroup('CREATE', STREAM, 'later', '$');
    await redis.client.xreadgroup('GROUP', AUDIT_GROUP, 'audit-1', 'COUNT', 1, 'STREAMS', STREAM, '>');
    for (const adapter of ADAPTERS) {
      const app = await dashboard.start({ readOnly: false, guard: AllowOperators }, adapter);
      const view = await get<EntryView>(app, 'entry-view', { stream: STREAM, id: id! });
      expect(view.status).toBe(200);
      expect(view.body).toMatchObject({ stream: STREAM, key: STREAM, id, state: 'running', fieldsFrom: 'stream', progress: null, result: null });
      expect(view.body.wire).toEqual({ pattern: STREAM, headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, tenant: 'acme' }, headersError: null, traceId });
      expect(view.body.fields!.map(([name, value]) => [name.text, value.text])).toEqual([['pattern', STREAM], ['data', '{"order":7}'], ['headers', headers]]);
      // Per group, as XPENDING has it: the audit group's owner and one delivery (idle less than the lease window: running); the later group read past it.
      expect(view.body.groups).toEqual([
        expect.objectContaining({ group: AUDIT_GROUP, state: 'running', consumer: 'audit-1', deliveries: 1 }),
        expect.objectContaining({ group: 'later', state: 'done', consumer: null, deliveries: null }),
      ]);
      await dashboard.close();
    }

    const app = await dashboard.start({ readOnly: false, guard: AllowOperators }, 'fastify');
    // The cancel needs a reason of text: refused naming it.
    expect(await post(app, 'entries/cancel', { stream: STREAM, id, reason: '' })).toMatchObject({ status: 400, body: { message: expect.stringContaining('Invalid option "reason"') } });
    const cancelled = await post(app, 'entries/cancel', { stream: STREAM, id, reason: 'customer asked' });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ cancelled: true, previous: 'pending', key: STREAM, deadLetter: { key: deadLetterKey(STREAM) } });
    expect(await redis.client.xlen(STREAM)).toBe(0);
    expect(app.logger.lines).toContain(`cancel entry: stream "${STREAM}", id "${id}": cancelled (was pending), dead letter ${(cancelled.body.deadLetter as { id: string }).id}`);
    // Now a dead letter: its fields from there, with its reason and the operator's words.
    const dead = await get<EntryView>(app, 'entry-view', { stream: STREAM, id: id! });
    expect(dead.body).toMatchObject({ state: 'dead-lettered', fieldsFrom: 'dead-letter', wire: { traceId } });
    expect(dead.body.groups[0]).toMatchObject({ group: AUDIT_GROUP, deadLetter: { reason: 'cancelled', error: 'customer asked' } });
    // Purged: nothing has it any more.
    await redis.client.del(deadLetterKey(STREAM));
    const gone = await get<EntryView>(app, 'entry-view', { stream: STREAM, id: id! });
    expect(gone.status).toBe(404);
    expect(gone.body.message).toMatch(/^no such entry/);
    expect(await get<EntryView>(app, 'entry-view', { stream: STREAM, id: '' })).toMatchObject({ status: 400, body: { message: expect.stringContaining('Invalid option "id"') } });
    expect(await post(app, 'entries/cancel', { stream: STREAM, reason: 'why' })).toMatchObject({ status: 400, body: { message: expect.stringContaining('Invalid option "id"') } });
  });

  it('cuts large values to 64 KiB in the view and shows bytes that are not UTF-8 as marked base64; a partitioned stream\'s entry is found in its partition', async () => {
    const large = 'x'.repeat(100 * 1024);
    const binary = Buffer.from([0xff, 0xfe, 0x00, 0x41]);
    const id = (await redis.client.xadd(STREAM, '*', 'data', large, Buffer.from('bytes'), binary))!;
    await redis.client.set('{parted}:partitions', '2');
    const partitioned = (await redis.client.xadd('parted:p1', '*', 'data', '{"p":1}'))!;
    const app = await dashboard.start({});
    const view = await get<EntryView>(app, 'entry-view', { stream: STREAM, id });
    expect(view.body.fields).toEqual([
      [{ text: 'data', encoding: 'utf8', bytes: 4, truncated: false }, { text: large.slice(0, 64 * 1024), encoding: 'utf8', bytes: 100 * 1024, truncated: true }],
      [{ text: 'bytes', encoding: 'utf8', bytes: 5, truncated: false }, { text: binary.toString('base64'), encoding: 'base64', bytes: 4, truncated: false }],
    ]);
    // The list cuts each to 1 KiB.
    const list = await get<EntriesView>(app, 'entries', { stream: STREAM });
    expect(list.body.entries[0]!.fields[0]![1]).toEqual({ text: large.slice(0, 1024), encoding: 'utf8', bytes: 100 * 1024, truncated: true });
    // By the partitioned stream's name: found in the partition that has it.
    expect((await get<EntryView>(app, 'entry-view', { stream: 'parted', id: partitioned })).body).toMatchObject({ stream: 'parted', key: 'parted:p1', state: 'waiting' });
    expect((await get<EntriesView>(app, 'entries', { stream: 'parted:p1' })).body).toMatchObject({ total: 1, entries: [{ id: partitioned }] });
  });

  it("shows the entry's kept progress and result as the lifecycle stores them, a failed delivery's error too", async () => {
    const id = (await redis.client.xadd(STREAM, '*', 'data', '{"order":9}'))!;
    await redis.client.xgroup('CREATE', STREAM, AUDIT_GROUP, '0');
    await redis.client.xreadgroup('GROUP', AUDIT_GROUP, 'audit-1', 'COUNT', 1, 'STREAMS', STREAM, '>');
    await redis.client.set(progressKey(STREAM, id), encodeRecord({ value: { done: 40, of: 100 }, delivery: 1, at: '2026-12-05T09:00:00.000Z' }));
    await redis.client.set(resultKey(STREAM, id), encodeRecord({ state: 'failed', error: { name: 'Error', message: 'card declined' }, delivery: 1, at: '2026-12-05T09:00:01.000Z' }));
    const app = await dashboard.start({});
    const view = await get<EntryView>(app, 'entry-view', { stream: STREAM, id });
    expect(view.body.progress).toEqual({ state: 'progress', delivery: 1, at: '2026-12-05T09:00:00.000Z', value: { text: '{"done":40,"of":100}', encoding: 'utf8', bytes: 20, truncated: false }, error: null });
    expect(view.body.result).toEqual({ state: 'failed', delivery: 1, at: '2026-12-05T09:00:01.000Z', value: null, error: { name: 'Error', message: 'card declined' } });
    // Running while its idle time is under the lease window (30 s), so the status is running, not failed, yet.
    expect(view.body.groups[0]).toMatchObject({ group: AUDIT_GROUP, state: 'running', consumer: 'audit-1' });
  });

  it('shows a held entry with its own fields among holds due at the same ms', async () => {
    const client = new RedisStreamsClient({ connection: redis.server.url });
    const deliverAt = Date.now() + 3_600_000;
    const holds: string[] = [];
    try {
      for (let n = 0; n < 3; n++) holds.push(await lastValueFrom(client.emit<string>('later', new RedisStreamsRecord({ n }, { deliverAt }))));
    } finally {
      await client.close();
    }
    const app = await dashboard.start({});
    for (const [n, hold] of holds.entries()) {
      const view = await get<EntryView>(app, 'entry-view', { stream: 'later', id: hold });
      expect(view.body).toMatchObject({ state: 'held', key: 'later', dueAt: new Date(deliverAt).toISOString(), fieldsFrom: 'delayed' });
      expect(view.body.fields!.map(([name, value]) => [name.text, value.text])).toEqual([['pattern', 'later'], ['data', JSON.stringify({ n })]]);
    }
  });

  it('refuses its reads to another site and the cancel without the CSRF token, as its peers', async () => {
    const id = (await redis.client.xadd(STREAM, '*', 'data', 'secret-payload'))!;
    for (const adapter of ADAPTERS) {
      const app = await dashboard.start({ readOnly: false, guard: AllowOperators }, adapter, { cors: true });
      for (const path of [`entries?stream=${STREAM}`, `entry-view?stream=${STREAM}&id=${id}`]) {
        for (const headers of <Record<string, string>[]>[{ origin: 'https://evil.example', 'sec-fetch-mode': 'cors' }, { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' }]) {
          const refused = await fetch(`${app.page}/api/${path}`, { headers, signal: AbortSignal.timeout(5_000) });
          expect(refused.status, `${adapter} ${path}`).toBe(403);
          expect(await refused.text()).not.toContain('secret-payload');
        }
      }
      const withoutToken = await fetch(`${app.page}/api/entries/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ stream: STREAM, id, reason: 'no' }), signal: AbortSignal.timeout(5_000) });
      expect(withoutToken.status, adapter).toBe(403);
      expect(await redis.client.xlen(STREAM)).toBe(1);
      await dashboard.close();
    }
  });

  it('refuses the cancel while read-only', async () => {
    const id = await redis.client.xadd(STREAM, '*', 'data', '1');
    const app = await dashboard.start({});
    const refused = await fetch(`${app.page}/api/entries/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ stream: STREAM, id, reason: 'no' }), signal: AbortSignal.timeout(5_000) });
    expect(refused.status).toBe(403);
    expect(await redis.client.xlen(STREAM)).toBe(1);
  });
});
