import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { readdirSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { RedisStreamsDashboardModule } from '../../src/dashboard/index.js';
import { SECURITY_HEADERS } from '../../src/dashboard/dashboard-security.js';
import type { OverviewView, StreamView } from '../../src/dashboard/dashboard-views.js';
import type { DeadLettersView, DeadLetterView } from '../../src/dashboard/dashboard-reads.js';
import type { FieldView } from '../../src/dashboard/field-views.js';
import { deadLetterKey } from '../../src/redis/keys.js';
import { AUDIT_GROUP, HANDLED_STREAM, PARTITIONED_STREAM, seedStream, startDashboardApp, type DashboardApp } from '../helpers/dashboard-app.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { listeningServers } from '../../src/server/liveness.js';
import { DeadLetterService } from '../../src/recovery/dead-letter.service.js';
import { optionError } from '../helpers/option-errors.js';
import { RedisServerProcess } from '../helpers/redis-server.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/** The page's files, as the module serves them. */
const ASSET_FOLDER = new URL('../../src/dashboard/assets/', import.meta.url);

/** The app's guard of the tests: lets a request on when it carries `x-operator: yes`. */
@Injectable()
class OperatorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-operator'] === 'yes';
  }
}

const OPERATOR = { 'x-operator': 'yes' };
const TIMEOUT = { signal: (ms = 5_000) => AbortSignal.timeout(ms) };

async function get(url: string, headers: Record<string, string> = OPERATOR, timeoutMs?: number): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(url, { headers, signal: TIMEOUT.signal(timeoutMs) });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

async function post(url: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, { method: 'POST', headers: { ...OPERATOR, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal: TIMEOUT.signal() });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function csrfToken(app: DashboardApp): Promise<string> {
  const session = JSON.parse((await get(`${app.page}/api/session`)).text) as { csrfToken: string | null };
  return session.csrfToken as string;
}

async function overview(app: DashboardApp, named: string[] = []): Promise<OverviewView> {
  const query = named.map((name) => `stream=${encodeURIComponent(name)}`).join('&');
  const reply = await get(`${app.page}/api/overview?${query}`);
  expect(reply.status, reply.text).toBe(200);
  return JSON.parse(reply.text) as OverviewView;
}

function streamOf(view: OverviewView, name: string): StreamView {
  const stream = view.streams.find((one) => one.name === name);
  if (stream === undefined) throw new Error(`stream ${name} not in the overview: ${view.streams.map((one) => one.name).join(', ')}`);
  return stream;
}

describe('dashboard options', () => {
  it('refuses mutations without a guard of the app, and bad options, naming the option', () => {
    expect(optionError(() => RedisStreamsDashboardModule.forRoot({ readOnly: false })).option).toBe('guard');
    expect(optionError(() => RedisStreamsDashboardModule.forRoot({ path: '/a"b' })).option).toBe('path');
    expect(optionError(() => RedisStreamsDashboardModule.forRoot({ streams: ['ok', ''] })).option).toBe('streams[1]');
    expect(optionError(() => RedisStreamsDashboardModule.forRoot({ refreshInterval: 10 })).option).toBe('refreshInterval');
    expect(optionError(() => RedisStreamsDashboardModule.forRoot({ guard: 'yes' as never })).option).toBe('guard');
  });
});

describe('dashboard over HTTP (Express and Fastify)', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  it('finds the stream the handlers read, and reports its counts as Redis does (Express and Fastify alike)', async () => {
    await seedStream(redis.client, HANDLED_STREAM, { entries: 6, pending: 2, deadLetters: 1 });
    for (const adapter of ['express', 'fastify'] as const) {
      const app = await dashboard.start({ guard: OperatorGuard }, adapter);
      const page = await get(app.page);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.text).toContain('<script type="module" src="streams/assets/dashboard.js"></script>');
      if (adapter === 'express') {
        // Asked with a trailing slash, the links are relative to the slash.
        expect((await get(`${app.page}/`)).text).toContain('<script type="module" src="assets/dashboard.js"></script>');
      }
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(page.headers.get(name), `${adapter}: ${name}`).toBe(value);
      // Every module of the page is served, and none writes HTML from strings.
      for (const name of readdirSync(ASSET_FOLDER).filter((file) => file.endsWith('.js'))) {
        const script = await get(`${app.page}/assets/${name}`);
        expect(script.status, name).toBe(200);
        expect(script.headers.get('content-type'), name).toMatch(/^text\/javascript/);
        expect(script.text, name).not.toMatch(/\.(inner|outer)HTML|insertAdjacentHTML|document\.write/);
      }
      expect((await get(`${app.page}/assets/dashboard.css`)).headers.get('content-type')).toMatch(/^text\/css/);
      // Only the page's scripts and style: not its HTML template, not a path out of the folder.
      for (const path of ['index.html', '..%2Fdashboard.controller.ts', 'missing.js']) expect((await get(`${app.page}/assets/${path}`)).status, path).toBe(404);

      // The handler's group reads everything; wait until it acked what it read.
      await waitFor(async () => streamOf(await overview(dashboard.app), HANDLED_STREAM).groups.find((group) => group.name === 'billing')?.pending === 0, 'billing to ack');
      const stream = streamOf(await overview(app), HANDLED_STREAM);
      const groups = (await redis.client.xinfo('GROUPS', HANDLED_STREAM)) as unknown[][];
      const audit = groups.map((row) => Object.fromEntries(chunk(row))).find((row) => row.name === AUDIT_GROUP)!;
      expect(stream).toMatchObject({ source: 'handlers', exists: true, length: await redis.client.xlen(HANDLED_STREAM), deadLetters: await redis.client.xlen(deadLetterKey(HANDLED_STREAM)) });
      expect(stream.deadLetters).toBe(1);
      const auditView = stream.groups.find((group) => group.name === AUDIT_GROUP)!;
      expect(auditView).toMatchObject({ handled: false, pending: Number(audit.pending) });
      expect(auditView.pending).toBe(2);
      expect(auditView.consumers).toEqual([expect.objectContaining({ name: 'audit-1', pending: 2 })]);
      expect(stream.groups.find((group) => group.name === 'billing')).toMatchObject({ handled: true, consumers: [expect.objectContaining({ name: 'billing-1' })] });
      await dashboard.close();
    }
  });

  it('aggregates a partitioned stream by its name, with each partition in detail', async () => {
    await redis.client.set('{parted}:partitions', '2');
    await seedStream(redis.client, 'parted:p0', { entries: 3, pending: 1, deadLetters: 1 });
    await seedStream(redis.client, 'parted:p1', { entries: 2, pending: 1, deadLetters: 0 });
    const app = await dashboard.start({ streams: ['parted'] });
    const stream = streamOf(await overview(app), 'parted');
    expect(stream).toMatchObject({ source: 'option', length: 5, deadLetters: 1 });
    expect(stream.groups).toEqual([expect.objectContaining({ name: AUDIT_GROUP, pending: 2, consumers: [expect.objectContaining({ name: 'audit-1', pending: 2 })] })]);
    expect(stream.partitions?.map((partition) => [partition.name, partition.length, partition.deadLetters])).toEqual([['parted:p0', 3, 1], ['parted:p1', 2, 0]]);
    // Listed together: the merged dead letters name their partition (the key a redrive by id takes).
    const letters = JSON.parse((await get(`${app.page}/api/dead-letters?stream=parted`)).text) as { deadLetters: { sourceStream: string }[] };
    expect(letters.deadLetters.map((letter) => letter.sourceStream)).toEqual(['parted:p0']);
  });

  it("shows a partitioned stream the handlers read by its name, its partitions from the servers' bindings", async () => {
    const app = await dashboard.start({}, 'express', { partitioned: true });
    await redis.client.xadd(`${PARTITIONED_STREAM}:p1`, '*', 'pattern', PARTITIONED_STREAM, 'data', '{}');
    const server = [...listeningServers][0]!;
    expect(server.liveness().streams.filter((binding) => binding.partitionOf !== undefined)).toEqual([
      { stream: `${PARTITIONED_STREAM}:p0`, group: 'billing', partitionOf: PARTITIONED_STREAM, deadLetterKey: `{${PARTITIONED_STREAM}:p0}:dead`, paused: false },
      { stream: `${PARTITIONED_STREAM}:p1`, group: 'billing', partitionOf: PARTITIONED_STREAM, deadLetterKey: `{${PARTITIONED_STREAM}:p1}:dead`, paused: false },
    ]);
    const view = await overview(app);
    expect(view.streams.map((stream) => stream.name)).toEqual([HANDLED_STREAM, PARTITIONED_STREAM]);
    const stream = streamOf(view, PARTITIONED_STREAM);
    expect(stream).toMatchObject({ source: 'handlers', length: 1, groups: [expect.objectContaining({ name: 'billing', handled: true })] });
    expect(stream.partitions?.map((partition) => [partition.name, partition.source, partition.length])).toEqual([[`${PARTITIONED_STREAM}:p0`, 'partition', 0], [`${PARTITIONED_STREAM}:p1`, 'partition', 1]]);
  });

  it("counts a stream's delayed entries as Redis does: held, and due but not promoted; a partitioned stream's summed", async () => {
    const client = new RedisStreamsClient({ connection: redis.server.url });
    try {
      // No worker reads these streams: the past-due ones stay due, not promoted.
      const emit = (stream: string, options: ConstructorParameters<typeof RedisStreamsRecord>[1]) => lastValueFrom(client.emit(stream, new RedisStreamsRecord({ n: 1 }, options)));
      await emit('later', { delay: 60_000 });
      await emit('later', { delay: 60_000 });
      await emit('later', { deliverAt: new Date(Date.now() - 60_000) });
      await redis.client.set('{dparted}:partitions', '2');
      await emit('dparted:p0', { delay: 60_000 });
      await emit('dparted:p0', { deliverAt: 0 });
      await emit('dparted:p1', { delay: 60_000 });
    } finally {
      await client.close();
    }
    const app = await dashboard.start({ streams: ['later', 'dparted'] });
    const view = await overview(app);
    // The held entries' streams do not exist yet: they are counted all the same.
    expect(streamOf(view, 'later')).toMatchObject({ exists: false, delayed: await delayedInRedis(redis.client, 'later') });
    expect(streamOf(view, 'later').delayed).toEqual({ held: 3, due: 1 });
    const parted = streamOf(view, 'dparted');
    expect(parted.partitions?.map((partition) => [partition.name, partition.delayed])).toEqual([
      ['dparted:p0', await delayedInRedis(redis.client, 'dparted:p0')],
      ['dparted:p1', await delayedInRedis(redis.client, 'dparted:p1')],
    ]);
    expect(parted.delayed).toEqual({ held: 3, due: 1 });
    // A stream with nothing held: zeros.
    expect(streamOf(view, HANDLED_STREAM).delayed).toEqual({ held: 0, due: 0 });
  });

  it('shows null for the delayed counts of a stream whose delayed keys the ACL refuses, and the rest of the stream as usual', async () => {
    await seedStream(redis.client, 'legacy', { entries: 2, pending: 1, deadLetters: 1 });
    await redis.client.zadd('{legacy}:delayed', 0, 'hold-1');
    // Rules from before delayed entries: the streams and dead letters, not {legacy}:delayed.
    const keys = ['~legacy', '~{legacy}:dead', `~${HANDLED_STREAM}`, `~{${HANDLED_STREAM}}:*`];
    await redis.client.call('ACL', 'SETUSER', 'dash', 'reset', 'on', '>dash-pw', '+@all', 'allchannels', ...keys);
    let app: DashboardApp | undefined;
    try {
      app = await startDashboardApp(`redis://dash:dash-pw@127.0.0.1:${redis.server.port}`, { streams: ['legacy'] });
      const view = await overview(app);
      expect(streamOf(view, 'legacy')).toMatchObject({ exists: true, length: 2, deadLetters: 1, delayed: null, groups: [expect.objectContaining({ name: AUDIT_GROUP, pending: 1 })] });
      expect(streamOf(view, 'legacy').error).toBeUndefined();
      expect(streamOf(view, HANDLED_STREAM).delayed).toEqual({ held: 0, due: 0 });
    } finally {
      await app?.close();
      app = undefined;
      await redis.client.call('ACL', 'DELUSER', 'dash');
    }
  });

  it('reads at most maxStreams streams a refresh, and says how many it left out', async () => {
    const app = await dashboard.start({ streams: ['a', 'b', 'c'], maxStreams: 2 });
    const view = await overview(app, ['d']);
    expect(view.streams.map((stream) => stream.name)).toEqual([HANDLED_STREAM, 'a']);
    expect(view.omitted).toBe(3);
    const tooMany = await get(`${app.page}/api/overview?${Array.from({ length: 11 }, (_, i) => `stream=s${i}`).join('&')}`);
    expect(tooMany.status).toBe(400);
    expect(tooMany.text).toContain('at most 10 streams by name');
  });

  it('is read-only by default: no CSRF token, every mutation refused with 403, nothing changed', async () => {
    const [deadLetterId] = await seedStream(redis.client, HANDLED_STREAM, { entries: 2, pending: 0, deadLetters: 1 });
    const app = await dashboard.start();
    const session = JSON.parse((await get(`${app.page}/api/session`)).text) as { readOnly: boolean; csrfToken: string | null };
    expect(session).toMatchObject({ readOnly: true, csrfToken: null });
    const refused = await post(`${app.page}/api/dead-letters/redrive`, { stream: HANDLED_STREAM, ids: [deadLetterId] }, {});
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/read-only/);
    for (const path of ['dead-letters/purge', 'pending/ack', 'pending/claim', 'consumers/delete', 'groups/pause', 'groups/resume', 'delayed/promote', 'delayed/remove']) {
      expect((await post(`${app.page}/api/${path}`, { stream: HANDLED_STREAM }, {})).status, path).toBe(403);
    }
    expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(1);
  });

  it('with mutations enabled: 403 without the CSRF token, with a wrong one, cross-site, from another origin, or without a JSON body', async () => {
    const [deadLetterId] = await seedStream(redis.client, HANDLED_STREAM, { entries: 2, pending: 0, deadLetters: 1 });
    const app = await dashboard.start({ readOnly: false, guard: OperatorGuard });
    const token = await csrfToken(app);
    expect(token).toMatch(/^[0-9a-z]+\.[\w-]{22}\.[\w-]{43}$/);
    // Another site cannot fetch the token either (even where the app enabled CORS).
    expect((await get(`${app.page}/api/session`, { ...OPERATOR, 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await get(`${app.page}/api/session`, { ...OPERATOR, origin: 'http://evil.example' })).status).toBe(403);
    const url = `${app.page}/api/dead-letters/purge`;
    const body = { stream: HANDLED_STREAM, ids: [deadLetterId] };
    expect((await post(url, body, {})).status).toBe(403);
    expect((await post(url, body, { 'x-csrf-token': `${token.slice(0, -1)}x` })).status).toBe(403);
    expect((await post(url, body, { 'x-csrf-token': token, 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await post(url, body, { 'x-csrf-token': token, origin: 'http://evil.example' })).status).toBe(403);
    const form = await fetch(url, { method: 'POST', headers: { ...OPERATOR, 'x-csrf-token': token, 'content-type': 'text/plain' }, body: JSON.stringify(body), signal: TIMEOUT.signal() });
    expect(form.status).toBe(403);
    // The app's guard comes first: without its header even the right token is refused.
    expect((await post(url, body, { 'x-operator': 'no', 'x-csrf-token': token })).status).toBe(403);
    expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(1);
    const refusals = app.logger.lines.filter((line) => line.startsWith('refused'));
    expect(refusals).toContain('refused "/streams/api/dead-letters/purge": missing, wrong or expired CSRF token');
    expect(refusals).toContain('refused "/streams/api/dead-letters/purge": cross-site request refused (Sec-Fetch-Site: "cross-site")');
    // The app's guard refused the last one: the dashboard's guards never saw it.
    expect(refusals).toHaveLength(7);

    const done = await post(url, body, { 'x-csrf-token': token, origin: app.origin, 'sec-fetch-site': 'same-origin' });
    expect(done).toMatchObject({ status: 200, body: { purged: 1 } });
    expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(0);
  });

  it("guards the page and the API with the app's guard", async () => {
    const app = await dashboard.start({ guard: OperatorGuard });
    for (const path of ['', '/assets/dashboard.js', '/api/session', '/api/overview']) {
      const refused = await get(`${app.page}${path}`, {});
      expect(refused.status, path).toBe(403);
      expect(refused.headers.get('content-security-policy')).toBe(SECURITY_HEADERS['Content-Security-Policy']);
    }
  });

  it('acks, claims and deletes consumers, logging each action (names, ids, outcome) without payloads', async () => {
    await seedStream(redis.client, 'work', { entries: 3, pending: 3, deadLetters: 0, value: 'secret-payload' });
    const app = await dashboard.start({ readOnly: false, guard: OperatorGuard, streams: ['work'] });
    const headers = { 'x-csrf-token': await csrfToken(app) };
    const pending = JSON.parse((await get(`${app.page}/api/pending?stream=work&group=${AUDIT_GROUP}`)).text) as { entries: { id: string; consumer: string }[] };
    const [first, second] = pending.entries.map((entry) => entry.id);
    expect(pending.entries.map((entry) => entry.consumer)).toEqual(['audit-1', 'audit-1', 'audit-1']);

    const entry = JSON.parse((await get(`${app.page}/api/entry?stream=work&id=${first}`)).text) as { fields: FieldView[] };
    expect(entry.fields.map(([name, value]) => [name.text, value.text])).toEqual([['pattern', 'work'], ['data', '{"n":0}'], ['note', 'secret-payload-0']]);

    expect((await post(`${app.page}/api/pending/ack`, { stream: 'work', group: AUDIT_GROUP, ids: [first] }, headers)).body).toEqual({ acked: 1 });
    // Claimed only while the owner the page showed still holds it.
    expect((await post(`${app.page}/api/pending/claim`, { stream: 'work', group: AUDIT_GROUP, owner: 'someone-else', consumer: 'ops', ids: [second] }, headers)).body).toMatchObject({ handedOff: [] });
    expect((await post(`${app.page}/api/pending/claim`, { stream: 'work', group: AUDIT_GROUP, owner: 'audit-1', consumer: 'ops', ids: [second] }, headers)).body).toMatchObject({ handedOff: [second] });
    const summary = (await redis.client.xpending('work', AUDIT_GROUP)) as [number, string, string, [string, string][]];
    expect(summary[0]).toBe(2);
    expect(Object.fromEntries(summary[3])).toEqual({ 'audit-1': '1', ops: '1' });
    // A consumer that holds pending entries stays: deleting it would drop them.
    expect((await post(`${app.page}/api/consumers/delete`, { stream: 'work', group: AUDIT_GROUP, consumer: 'ops' }, headers)).body).toMatchObject({ deleted: [] });
    await redis.client.xack('work', AUDIT_GROUP, second!);
    expect((await post(`${app.page}/api/consumers/delete`, { stream: 'work', group: AUDIT_GROUP, consumer: 'ops' }, headers)).body).toMatchObject({ deleted: ['ops'] });

    const bad = await post(`${app.page}/api/pending/ack`, { stream: 'work', group: AUDIT_GROUP, ids: ['not-an-id'] }, headers);
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/ids/);

    const actions = app.logger.lines.filter((line) => /^(ack|claim|delete)/.test(line));
    expect(actions).toEqual([
      `ack pending entries: stream "work", group "audit", ids ["${first}"]: 1 acked`,
      `claim pending entries: stream "work", group "audit", owner "someone-else", consumer "ops", ids ["${second}"]: 0 claimed, 1 not held by the owner any more`,
      `claim pending entries: stream "work", group "audit", owner "audit-1", consumer "ops", ids ["${second}"]: 1 claimed, 0 not held by the owner any more`,
      'delete consumer: stream "work", group "audit", consumer "ops": has_pending',
      'delete consumer: stream "work", group "audit", consumer "ops": deleted',
    ]);
    expect(app.logger.lines.join('\n')).not.toContain('secret-payload');
  });
});

describe('dashboard field values: previews, whole values on demand, bytes that are not UTF-8 (Express and Fastify)', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  it('sends each field of a dead letter cut to 1 KiB in a refresh (50 of 1 MiB: under 200 KB), and a whole value on demand, byte for byte', async () => {
    // 1 MiB: one byte, then two-byte characters; the cut at 1024 bytes falls inside one, and must not split it.
    const megabyte = `a${'é'.repeat((1 << 19) - 1)}`;
    const ids = await seedStream(redis.client, HANDLED_STREAM, { entries: 50, pending: 0, deadLetters: 50, value: megabyte });
    expect(ids).toHaveLength(50);
    for (const adapter of ['express', 'fastify'] as const) {
      const app = await dashboard.start({}, adapter);
      // 50 MiB leave Redis for every refresh still (XRANGE has no cut): slow on a busy host.
      const list = await get(`${app.page}/api/dead-letters?stream=${HANDLED_STREAM}`, OPERATOR, 30_000);
      expect(list.status).toBe(200);
      expect(Buffer.byteLength(list.text), adapter).toBeLessThan(200_000);
      const view = JSON.parse(list.text) as DeadLettersView;
      expect(view.deadLetters.map((letter) => letter.deadLetterId)).toEqual(ids);
      const [, note] = view.deadLetters[7]!.fields[2]!;
      expect(note).toEqual({ text: `a${'é'.repeat(511)}`, encoding: 'utf8', bytes: Buffer.byteLength(`${megabyte}-7`), truncated: true });
      expect(view.deadLetters[7]!.fields[0]).toEqual([{ text: 'pattern', encoding: 'utf8', bytes: 7, truncated: false }, { text: HANDLED_STREAM, encoding: 'utf8', bytes: HANDLED_STREAM.length, truncated: false }]);

      const whole = JSON.parse((await get(`${app.page}/api/dead-letter?stream=${HANDLED_STREAM}&id=${ids[7]}`)).text) as DeadLetterView;
      const [stored] = await redis.client.xrangeBuffer(deadLetterKey(HANDLED_STREAM), ids[7]!, ids[7]!);
      const storedNote = stored![1].at(-1)!;
      expect(whole.fields[2]![1]).toMatchObject({ encoding: 'utf8', truncated: false, bytes: storedNote.length });
      expect(Buffer.from(whole.fields[2]![1].text, 'utf8').equals(storedNote)).toBe(true);
      expect((await get(`${app.page}/api/dead-letter?stream=${HANDLED_STREAM}&id=1-1`)).status).toBe(404);
      await dashboard.close();
    }
  }, 60_000);

  it('shows bytes that are not UTF-8 as marked base64, in the list, a dead letter and an entry: never U+FFFD', async () => {
    const bytes = Buffer.from([0x61, 0xff, 0xfe, 0x00]);
    const name = Buffer.from([0xc3, 0x28]);
    await redis.client.xadd('raw', '*', 'pattern', 'raw', name, bytes);
    await redis.client.xgroup('CREATE', 'raw', AUDIT_GROUP, '0');
    const [[, [[id]]]] = (await redis.client.xreadgroup('GROUP', AUDIT_GROUP, 'audit-1', 'COUNT', 1, 'STREAMS', 'raw', '>')) as [string, [string, string[]][]][];
    await redis.client.xadd('raw', '*', 'pattern', 'raw', 'data', bytes);
    const [[lastId]] = await redis.client.xrevrange('raw', '+', '-', 'COUNT', 1);
    const marked = { text: bytes.toString('base64'), encoding: 'base64', bytes: 4, truncated: false };
    expect(marked.text).toBe('Yf/+AA==');
    for (const adapter of ['express', 'fastify'] as const) {
      const app = await dashboard.start({ streams: ['raw'] }, adapter);
      const entry = await get(`${app.page}/api/entry?stream=raw&id=${lastId}`);
      expect((JSON.parse(entry.text) as { fields: FieldView[] }).fields[1]).toEqual([{ text: 'data', encoding: 'utf8', bytes: 4, truncated: false }, marked]);
      expect(entry.text).not.toContain('\ufffd');
      const pendingEntry = JSON.parse((await get(`${app.page}/api/entry?stream=raw&id=${id}`)).text) as { fields: FieldView[] };
      expect(pendingEntry.fields[1]).toEqual([{ text: name.toString('base64'), encoding: 'base64', bytes: 2, truncated: false }, marked]);
      await dashboard.close();
    }
    await new DeadLetterService(redis.client).moveToDeadLetter({ stream: 'raw', group: AUDIT_GROUP, ids: [id!], reason: 'manual', error: 'boom' });
    const app = await dashboard.start({ streams: ['raw'] });
    const list = await get(`${app.page}/api/dead-letters?stream=raw`);
    expect(list.text).not.toContain('\ufffd');
    const [letter] = (JSON.parse(list.text) as DeadLettersView).deadLetters;
    expect(letter!.fields[1]).toEqual([{ text: name.toString('base64'), encoding: 'base64', bytes: 2, truncated: false }, marked]);
    const whole = JSON.parse((await get(`${app.page}/api/dead-letter?stream=raw&id=${letter!.deadLetterId}`)).text) as DeadLetterView;
    expect(whole.fields[1]).toEqual(letter!.fields[1]);
  });
});

describe('dashboard lists paged with a cursor (Express and Fastify)', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  /** Every page of `path` (a list route), following `next` until it is null. */
  async function pages<T extends { next: string | null; total: number }>(dashboard: DashboardApp, path: string): Promise<T[]> {
    const all: T[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const reply = await get(`${dashboard.page}/api/${path}${cursor === '' ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
      expect(reply.status, reply.text).toBe(200);
      const page = JSON.parse(reply.text) as T;
      all.push(page);
      cursor = page.next;
      expect(all.length).toBeLessThan(10);
    }
    return all;
  }

  it('pages dead letters and pending entries 50 at a time from a cursor, each id once and in order, saying how many there are', async () => {
    const deadLetterIds = await seedStream(redis.client, 'paged', { entries: 230, pending: 0, deadLetters: 120 });
    // Of the 110 entries not delivered yet, 105 now pending in the group.
    const pendingIds = ((await redis.client.xreadgroup('GROUP', AUDIT_GROUP, 'audit-1', 'COUNT', 105, 'STREAMS', 'paged', '>')) as [string, [string, string[]][]][])[0]![1].map(([id]) => id);
    expect(pendingIds).toHaveLength(105);
    for (const adapter of ['express', 'fastify'] as const) {
      const app = await dashboard.start({ streams: ['paged'] }, adapter);
      const letterPages = await pages<DeadLettersView>(app, 'dead-letters?stream=paged');
      expect(letterPages.map((page) => [page.deadLetters.length, page.total, page.more])).toEqual([[50, 120, true], [50, 120, true], [20, 120, false]]);
      expect(letterPages.flatMap((page) => page.deadLetters.map((letter) => letter.deadLetterId))).toEqual(deadLetterIds);
      const pendingPages = await pages<{ entries: { id: string }[]; next: string | null; total: number }>(app, `pending?stream=paged&group=${AUDIT_GROUP}`);
      expect(pendingPages.map((page) => [page.entries.length, page.total])).toEqual([[50, 105], [50, 105], [5, 105]]);
      expect(pendingPages.flatMap((page) => page.entries.map((entry) => entry.id))).toEqual(pendingIds);

      // A cursor stays where it was while the list changes before it: the next page starts after it.
      if (adapter === 'fastify') {
        expect(await redis.client.xdel(deadLetterKey('paged'), ...deadLetterIds.slice(0, 10))).toBe(10);
        const second = JSON.parse((await get(`${app.page}/api/dead-letters?stream=paged&cursor=${encodeURIComponent(letterPages[0]!.next!)}`)).text) as DeadLettersView;
        expect([second.deadLetters[0]!.deadLetterId, second.total]).toEqual([deadLetterIds[50], 110]);
      }

      const bad = await get(`${app.page}/api/pending?stream=paged&group=${AUDIT_GROUP}&cursor=50`);
      expect(bad.status).toBe(400);
      expect(bad.text).toContain('cursor');
      await dashboard.close();
    }
  });

  it('pages the dead letters of a partitioned stream merged in id order', async () => {
    await redis.client.set('{pparted}:partitions', '2');
    const first = await seedStream(redis.client, 'pparted:p0', { entries: 40, pending: 0, deadLetters: 40 });
    const second = await seedStream(redis.client, 'pparted:p1', { entries: 30, pending: 0, deadLetters: 30 });
    const app = await dashboard.start({ streams: ['pparted'] });
    const letterPages = await pages<DeadLettersView>(app, 'dead-letters?stream=pparted');
    expect(letterPages.map((page) => [page.deadLetters.length, page.total])).toEqual([[50, 70], [20, 70]]);
    const ids = letterPages.flatMap((page) => page.deadLetters.map((letter) => letter.deadLetterId));
    expect(new Set(ids)).toEqual(new Set([...first, ...second]));
    expect(ids).toEqual([...ids].sort(byStreamId));
  });
});

function byStreamId(a: string, b: string): number {
  const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
  return am === bm ? Number(as - bs) : am < bm ? -1 : 1;
}

describe('dashboard on a password-protected Redis', () => {
  const PASSWORD = 'dashboard-s3cret-pass';
  let server: RedisServerProcess | undefined;
  let app: DashboardApp | undefined;

  afterEach(async () => {
    await app?.close();
    await server?.stop();
  });

  it('shows no password or connection URL on any page or API answer, errors included', async () => {
    server = await RedisServerProcess.start({ password: PASSWORD });
    const admin = server.client();
    try {
      await seedStream(admin, HANDLED_STREAM, { entries: 2, pending: 1, deadLetters: 1 });
      await admin.set('not-a-stream', 'x');
      const url = `redis://:${PASSWORD}@127.0.0.1:${server.port}`;
      app = await startDashboardApp(url, { guard: OperatorGuard, streams: ['not-a-stream'] });
      const answers = await Promise.all(
        ['', '/assets/dashboard.js', '/api/session', '/api/overview?stream=missing', `/api/dead-letters?stream=${HANDLED_STREAM}`, `/api/pending?stream=${HANDLED_STREAM}&group=${AUDIT_GROUP}`, '/api/entry?stream=not-a-stream&id=1-1', '/api/pending?stream=not-a-stream&group=g'].map((path) => get(`${app!.page}${path}`)),
      );
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200, 200, 400, 400]);
      for (const answer of answers) {
        expect(answer.text).not.toContain(PASSWORD);
        expect(answer.text).not.toContain(`127.0.0.1:${server.port}`);
      }
      expect(streamOf(JSON.parse(answers[3]!.text) as OverviewView, 'not-a-stream').error).toMatch(/does not hold a stream/);
    } finally {
      admin.disconnect();
    }
  });
});

/** What Redis itself says of `stream`'s delayed schedule: ZCARD, and ZCOUNT up to Redis' TIME now. */
async function delayedInRedis(redis: Redis, stream: string): Promise<{ held: number; due: number }> {
  const key = `{${stream}}:delayed`;
  const [seconds, micros] = (await redis.time()) as [number | string, number | string];
  const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  return { held: await redis.zcard(key), due: await redis.zcount(key, '-inf', now) };
}

function chunk(row: unknown[]): [string, unknown][] {
  const pairs: [string, unknown][] = [];
  for (let i = 0; i + 1 < row.length; i += 2) pairs.push([String(row[i]), row[i + 1]]);
  return pairs;
}
