import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { RedisStreamsScheduler } from '../../src/client/redis-streams-scheduler.js';
import { BULK_MAX_SCANNED, type BulkView } from '../../src/dashboard/dashboard-bulk.js';
import { MAX_READ } from '../../src/dashboard/dashboard-scan.js';
import { deadLetterKey } from '../../src/redis/keys.js';
import { AUDIT_GROUP, seedStream } from '../helpers/dashboard-app.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { ADAPTERS, csrfToken, OperatorGuard, postJson } from '../helpers/dashboard-http.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/** No handler of the test app reads it: its pending entries, dead letters and delayed entries stay as seeded. */
const STREAM = 'bulk';

describe('dashboard bulk actions over HTTP (Express and Fastify)', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  async function start(adapter: (typeof ADAPTERS)[number] = 'express', actions?: string[]): Promise<string> {
    const app = await dashboard.start({ readOnly: false, guard: OperatorGuard, streams: [STREAM], ...(actions ? { actions: actions as never } : {}) }, adapter);
    return (await csrfToken(app))!;
  }

  /** Every step of a bulk action, following `next` until null. */
  async function runAll(kind: string, body: Record<string, unknown>, token: string): Promise<BulkView[]> {
    const steps: BulkView[] = [];
    let cursor: string | null | undefined;
    do {
      const reply = await postJson<BulkView>(dashboard.app, `bulk/${kind}`, cursor === undefined ? body : { ...body, cursor }, token);
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      steps.push(reply.body);
      cursor = reply.body.next;
      expect(steps.length).toBeLessThan(50);
    } while (cursor !== null);
    return steps;
  }

  const sum = (steps: BulkView[], key: 'done' | 'scanned' | 'matched') => steps.reduce((total, step) => total + step[key], 0);

  for (const adapter of ADAPTERS) {
    it(`${adapter}: redrives and purges the dead letters matching a filter, and only those, logging each step`, async () => {
      const ids = await seedStream(redis.client, STREAM, { entries: 30, pending: 0, deadLetters: 30 });
      const token = await start(adapter);
      const redriven = await runAll('redrive', { stream: STREAM, contains: 'hello-1' }, token);
      // hello-1 and hello-10 … hello-19.
      expect(sum(redriven, 'done')).toBe(11);
      expect(sum(redriven, 'scanned')).toBe(30);
      expect(redriven.at(-1)).toMatchObject({ skipped: {}, skippedIds: [] });
      const left = (await redis.client.xrange(deadLetterKey(STREAM), '-', '+')).map(([id]) => id);
      expect(left).toEqual(ids.filter((_, n) => !String(n).startsWith('1')));
      const back = (await redis.client.xrange(STREAM, '-', '+')).slice(30).map(([, fields]) => fields[fields.indexOf('note') + 1]);
      expect(back).toEqual(['hello-1', ...Array.from({ length: 10 }, (_, i) => `hello-1${i}`)]);
      expect(dashboard.app.logger.lines).toContain(`bulk redrive dead letters: stream "${STREAM}", contains "hello-1", from "start": 30 gone through, 11 matching, 11 done, 0 skipped, next null`);

      const purged = await runAll('purge', { stream: STREAM, field: 'note', value: 'hello-25' }, token);
      expect(sum(purged, 'done')).toBe(1);
      expect(await redis.client.xlen(deadLetterKey(STREAM))).toBe(18);
      expect((await redis.client.xrange(deadLetterKey(STREAM), '-', '+')).map(([id]) => id)).not.toContain(ids[25]);
    });
  }

  it('acks every pending entry of a group in bounded steps, and with a filter only the matching ones, skipping those whose body is gone', async () => {
    await seedStream(redis.client, STREAM, { entries: 2_500, pending: 2_500, deadLetters: 0 });
    const token = await start('fastify');
    const trimmed = (await redis.client.xrange(STREAM, '-', '+', 'COUNT', 1))[0]![0];
    await redis.client.xdel(STREAM, trimmed);
    // note = hello-7, hello-70 … hello-79, hello-700 … (the first entry, hello-0, is gone).
    const filtered = await runAll('ack', { stream: STREAM, group: AUDIT_GROUP, field: 'note', value: 'hello-7' }, token);
    expect(sum(filtered, 'done')).toBe(1);
    expect(filtered.flatMap((step) => step.skippedIds)).toEqual([{ id: trimmed, reason: 'body_gone' }]);
    expect(Number(((await redis.client.xpending(STREAM, AUDIT_GROUP)) as [number])[0])).toBe(2_499);

    const all = await runAll('ack', { stream: STREAM, group: AUDIT_GROUP }, token);
    expect(all.length).toBeGreaterThan(1);
    for (const step of all) expect(step.scanned).toBeLessThanOrEqual(BULK_MAX_SCANNED + MAX_READ);
    expect(sum(all, 'done')).toBe(2_499);
    expect(await redis.client.xpending(STREAM, AUDIT_GROUP)).toEqual([0, null, null, null]);
  });

  it('promotes the held entries matching a filter, or a selection, leaving recurring schedules alone', async () => {
    const client = new RedisStreamsClient({ connection: redis.server.url });
    try {
      for (let n = 0; n < 6; n++) await lastValueFrom(client.emit(STREAM, new RedisStreamsRecord({ n, kind: n % 2 === 0 ? 'even' : 'odd' }, { delay: 600_000 + n * 1000 })));
      await new RedisStreamsScheduler(client).schedule(STREAM, { kind: 'even' }, { every: 'PT1H', key: 'hourly' });
    } finally {
      await client.close();
    }
    const token = await start();
    const steps = await runAll('promote', { stream: STREAM, contains: '"kind":"even"' }, token);
    expect(steps.at(-1)).toMatchObject({ done: 3, skipped: { recurring: 1 }, skippedIds: [{ id: 'repeat:hourly', reason: 'recurring' }] });
    const added = (await redis.client.xrange(STREAM, '-', '+')).map(([, fields]) => fields[fields.indexOf('data') + 1]);
    // Made due at once, they are added in hold-id order.
    expect(added.sort()).toEqual([0, 2, 4].map((n) => JSON.stringify({ n, kind: 'even' })));

    const held = (await redis.client.zrange(`{${STREAM}}:delayed`, 0, -1)).filter((hold) => hold !== 'repeat:hourly');
    expect(held).toHaveLength(3);
    const selected = await postJson<BulkView>(dashboard.app, 'bulk/promote', { stream: STREAM, holds: [held[0], 'gone-hold'] }, token);
    expect(selected.body).toMatchObject({ done: 1, skipped: { not_held: 1 }, next: null });
    expect(await redis.client.xlen(STREAM)).toBe(4);
    expect(await redis.client.zcard(`{${STREAM}}:delayed`)).toBe(3);
  });

  it('refuses a bulk action of a kind the actions option leaves out, and bad requests with 400', async () => {
    await seedStream(redis.client, STREAM, { entries: 3, pending: 0, deadLetters: 3 });
    const token = await start('express', ['redrive']);
    const refused = await postJson<{ message: string }>(dashboard.app, 'bulk/purge', { stream: STREAM }, token);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe('action "purge" is not allowed (RedisStreamsDashboardModule actions: redrive)');
    expect(await redis.client.xlen(deadLetterKey(STREAM))).toBe(3);
    for (const body of [{ stream: STREAM, contains: 'a', field: 'b', value: 'c' }, { stream: STREAM, cursor: 'x' }, {}]) {
      expect((await postJson(dashboard.app, 'bulk/redrive', body, token)).status, JSON.stringify(body)).toBe(400);
    }
    expect(await redis.client.xlen(deadLetterKey(STREAM))).toBe(3);
  });
});
