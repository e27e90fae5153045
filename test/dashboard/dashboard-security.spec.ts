import { Injectable, RequestMethod, type CanActivate } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { RedisStreamsDashboardModule, type RedisStreamsDashboardOptions } from '../../src/dashboard/index.js';
import { SECURITY_HEADERS } from '../../src/dashboard/dashboard-security.js';
import { dashboardController } from '../../src/dashboard/dashboard.controller.js';
import { resolveDashboardOptions } from '../../src/dashboard/dashboard.options.js';
import { deadLetterKey } from '../../src/redis/keys.js';
import { AUDIT_GROUP, HANDLED_STREAM, seedStream, startDashboardApp, type DashboardApp, type DashboardAppOptions } from '../helpers/dashboard-app.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { optionError } from '../helpers/option-errors.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/** A guard that lets everyone on: only the dashboard's own checks stand between a page and the data. */
@Injectable()
class Everyone implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One HTTP request through node:http, which (unlike fetch) sends the `Host` it is given. */
function send(url: string, { method = 'GET', headers = {}, body }: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(url, { method, headers, timeout: 5_000 }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
      response.on('error', reject);
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer from ${url} in 5 s`)));
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

async function tokenOf(app: DashboardApp): Promise<string> {
  const session = await send(`${app.page}/api/session`);
  expect(session.status, session.text).toBe(200);
  return (JSON.parse(session.text) as { csrfToken: string }).csrfToken;
}

const ADAPTERS = ['express', 'fastify'] as const;
const SECRET = 'secret-payload';

describe('dashboard request checks (Express and Fastify)', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  const start = (adapter: (typeof ADAPTERS)[number], options: RedisStreamsDashboardOptions, appOptions: DashboardAppOptions = {}): Promise<DashboardApp> => dashboard.start(options, adapter, appOptions);

  /** Every GET route of the dashboard, on a seeded stream with a pending entry and a dead letter. */
  async function readRoutes(): Promise<string[]> {
    const [deadLetterId] = await seedStream(redis.client, HANDLED_STREAM, { entries: 3, pending: 1, deadLetters: 1, value: SECRET });
    const [[pendingId]] = (await redis.client.xpending(HANDLED_STREAM, AUDIT_GROUP, '-', '+', 1)) as [[string]];
    return [
      '',
      '/assets/dashboard.js',
      '/api/session',
      '/api/overview',
      `/api/dead-letters?stream=${HANDLED_STREAM}`,
      `/api/dead-letter?stream=${HANDLED_STREAM}&id=${deadLetterId}`,
      `/api/pending?stream=${HANDLED_STREAM}&group=${AUDIT_GROUP}`,
      `/api/entry?stream=${HANDLED_STREAM}&id=${pendingId}`,
      `/api/delayed?stream=${HANDLED_STREAM}`,
      `/api/schedules?stream=${HANDLED_STREAM}`,
      `/api/entries?stream=${HANDLED_STREAM}`,
      `/api/entry-view?stream=${HANDLED_STREAM}&id=${pendingId}`,
      `/api/find?stream=${HANDLED_STREAM}&contains=${SECRET}`,
      `/api/series?stream=${HANDLED_STREAM}`,
    ];
  }

  it('checks every GET route the controller declares (a new read route must join the list above)', async () => {
    const checked = new Set((await readRoutes()).map((path) => path.split('?')[0]?.replace(/^\//, '')));
    const controller = dashboardController(resolveDashboardOptions({}));
    const declared = Object.getOwnPropertyNames(controller.prototype)
      .map((name) => (controller.prototype as Record<string, unknown>)[name])
      .filter((method): method is object => typeof method === 'function' && Reflect.getMetadata(METHOD_METADATA, method) === RequestMethod.GET)
      .map((method) => String(Reflect.getMetadata(PATH_METADATA, method)).replace(/^\//, ''));
    expect(declared.length).toBeGreaterThan(10);
    // The asset route is checked by one of its files.
    const missing = declared.filter((path) => !checked.has(path) && !(path === 'assets/:file' && checked.has('assets/dashboard.js')));
    expect(missing, 'GET routes not in readRoutes').toEqual([]);
  });

  it("refuses every read another site asks for, even where the app's CORS lets every origin read", async () => {
    const paths = await readRoutes();
    for (const adapter of ADAPTERS) {
      const app = await start(adapter, { readOnly: false, guard: Everyone }, { cors: true });
      for (const path of paths) {
        const url = `${app.page}${path}`;
        const sameOrigin = await send(url, { headers: { origin: app.origin, 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors' } });
        expect(sameOrigin.status, `${adapter} ${path} same-origin`).toBe(200);
        for (const headers of <Record<string, string>[]>[{ origin: 'https://evil.example', 'sec-fetch-mode': 'cors' }, { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' }, { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'no-cors' }]) {
          const refused = await send(url, { headers });
          expect(refused.status, `${adapter} ${path} ${JSON.stringify(headers)}`).toBe(403);
          expect(refused.text).not.toContain(SECRET);
          expect(refused.text).not.toContain('csrfToken');
        }
      }
      // A link followed from another site opens the page: the answer goes to the operator's tab.
      expect((await send(app.page, { headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' } })).status).toBe(200);
    }
    expect(dashboard.app.logger.lines).toContain('refused "/streams/api/dead-letters": request from another origin refused');
  });

  it('sends the security headers on every answer under the mount: unknown paths, malformed JSON bodies, behind a global prefix', async () => {
    for (const adapter of ADAPTERS) {
      for (const prefix of [undefined, 'admin']) {
        const app = await start(adapter, { readOnly: false, guard: Everyone }, { prefix });
        const token = await tokenOf(app);
        const answers = {
          'unknown path': await send(`${app.page}/nothing-here`),
          'unknown api path': await send(`${app.page}/api/nothing?x=1`),
          'malformed JSON': await send(`${app.page}/api/pending/ack`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': token }, body: '{"stream": ' }),
          page: await send(app.page),
        };
        expect(Object.values(answers).map((answer) => answer.status)).toEqual([404, 404, 400, 200]);
        for (const [what, answer] of Object.entries(answers)) {
          for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(answer.headers[name.toLowerCase()], `${adapter} ${prefix} ${what}: ${name}`).toBe(value);
        }
        // Not the app's other routes.
        expect((await send(`${app.origin}/elsewhere`)).headers['x-frame-options']).toBeUndefined();
      }
    }
  });

  it('refuses a Host it was not told to accept (DNS rebinding) on every route, and accepts loopback names, its own address and allowedHosts', async () => {
    const paths = await readRoutes();
    for (const adapter of ADAPTERS) {
      const app = await start(adapter, { readOnly: false, guard: Everyone });
      const port = new URL(app.origin).port;
      const token = await tokenOf(app);
      const rebound = `rebound.example:${port}`;
      // The rebinding page's requests: its own host in Host and Origin, same-origin to the browser.
      const asRebound = { host: rebound, origin: `http://${rebound}`, 'sec-fetch-site': 'same-origin' };
      for (const path of paths) {
        const refused = await send(`${app.page}${path}`, { headers: asRebound });
        expect(refused.status, `${adapter} ${path}`).toBe(403);
        expect(refused.text).not.toContain(SECRET);
        expect(refused.text).not.toContain('csrfToken');
      }
      const purge = await send(`${app.page}/api/dead-letters/purge`, { method: 'POST', headers: { ...asRebound, 'content-type': 'application/json', 'x-csrf-token': token }, body: JSON.stringify({ stream: HANDLED_STREAM, ids: 'all' }) });
      expect(purge.status).toBe(403);
      expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(1);
      expect(app.logger.lines).toContain(`refused "/streams/api/dead-letters/purge": host "${rebound}" is not allowed (RedisStreamsDashboardModule allowedHosts)`);
      for (const host of [`localhost:${port}`, `LOCALHOST:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'localhost']) {
        expect((await send(`${app.page}/api/overview`, { headers: { host } })).status, host).toBe(200);
      }
      for (const host of ['evil.example', `127.0.0.2:${port}`, 'localhost.evil.example']) {
        expect((await send(`${app.page}/api/overview`, { headers: { host } })).status, host).toBe(403);
      }

      // A read-only dashboard without a guard reads nothing for a rebinding page either.
      const readOnly = await start(adapter, {});
      expect((await send(`${readOnly.page}/api/dead-letters?stream=${HANDLED_STREAM}`, { headers: asRebound })).status).toBe(403);

      const configured = await start(adapter, { allowedHosts: ['Dash.Example.com', 'ops.example.com:8443', '10.1.2.3'] });
      for (const [host, status] of [['dash.example.com:1234', 200], ['dash.example.com', 200], ['ops.example.com:8443', 200], ['ops.example.com:8444', 403], ['10.1.2.3:80', 200], ['other.example.com', 403], [`localhost:${port}`, 200]] as const) {
        expect((await send(`${configured.page}/api/overview`, { headers: { host } })).status, host).toBe(status);
      }

      // Listening on another address of the host: that address is accepted, as it was reached.
      const elsewhere = await start(adapter, {}, { host: '127.0.0.2' });
      const otherPort = new URL(elsewhere.origin).port;
      expect((await send(`${elsewhere.page}/api/overview`, { headers: { host: `127.0.0.2:${otherPort}` } })).status).toBe(200);
      expect((await send(`${elsewhere.page}/api/overview`, { headers: { host: `127.0.0.3:${otherPort}` } })).status).toBe(403);
    }
  });

  it('answers 503 naming csrfSecret when Redis refuses the shared secret, and works with csrfSecret given', async () => {
    const [deadLetterId] = await seedStream(redis.client, HANDLED_STREAM, { entries: 2, pending: 0, deadLetters: 1 });
    // The stream's keys only: not nestjs-redis-streams:dashboard:csrf-secret.
    await redis.client.call('ACL', 'SETUSER', 'dash', 'reset', 'on', '>dash-pw', '+@all', 'allchannels', `~${HANDLED_STREAM}`, `~{${HANDLED_STREAM}}:*`);
    let app: DashboardApp | undefined;
    try {
      const url = `redis://dash:dash-pw@127.0.0.1:${redis.server.port}`;
      app = await startDashboardApp(url, { readOnly: false, guard: Everyone });
      const session = await send(`${app.page}/api/session`);
      expect(session.status).toBe(503);
      expect(session.text).toContain('csrfSecret');
      expect(session.text).not.toContain('dash-pw');
      await app.close();
      app = await startDashboardApp(url, { readOnly: false, guard: Everyone, csrfSecret: 's'.repeat(32) });
      const purge = await send(`${app.page}/api/dead-letters/purge`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': await tokenOf(app) }, body: JSON.stringify({ stream: HANDLED_STREAM, ids: [deadLetterId] }) });
      expect(purge.status, purge.text).toBe(200);
      expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(0);
      expect(await redis.client.exists('nestjs-redis-streams:dashboard:csrf-secret')).toBe(0);
    } finally {
      await app?.close();
      app = undefined;
      await redis.client.call('ACL', 'DELUSER', 'dash');
    }
  });

  it('refuses a bad allowedHosts or csrfSecret, naming it', () => {
    expect(optionError(() => RedisStreamsDashboardModule.forRoot({ allowedHosts: 'dash.example.com' as never })).option).toBe('allowedHosts');
    expect(optionError(() => RedisStreamsDashboardModule.forRoot({ allowedHosts: ['ok.example', 'http://dash.example.com'] })).option).toBe('allowedHosts[1]');
    expect(optionError(() => RedisStreamsDashboardModule.forRoot({ allowedHosts: ['dash.example.com/streams'] })).option).toBe('allowedHosts[0]');
    expect(optionError(() => RedisStreamsDashboardModule.forRoot({ allowedHosts: [''] })).option).toBe('allowedHosts[0]');
    expect(optionError(() => RedisStreamsDashboardModule.forRoot({ csrfSecret: 'too-short' })).option).toBe('csrfSecret');
  });
});
