import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { describe, expect, it } from 'vitest';
import { ACTION_KINDS, RedisStreamsDashboardModule, type DashboardSession } from '../../src/dashboard/index.js';
import { ACTION_KIND_METADATA, actionRefusal } from '../../src/dashboard/dashboard-permissions.js';
import { dashboardController } from '../../src/dashboard/dashboard.controller.js';
import { resolveDashboardOptions } from '../../src/dashboard/dashboard.options.js';
import { deadLetterKey } from '../../src/redis/keys.js';
import { AUDIT_GROUP, HANDLED_STREAM, seedStream } from '../helpers/dashboard-app.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { ADAPTERS, csrfToken, getJson, OperatorGuard, postJson } from '../helpers/dashboard-http.js';
import { optionError } from '../helpers/option-errors.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/** Every mutation route the controller declares, with its kind: a new route is checked without being listed here. */
const MUTATIONS: readonly [path: string, kind: string][] = (() => {
  const controller = dashboardController(resolveDashboardOptions({}));
  return Object.getOwnPropertyNames(controller.prototype)
    .map((name) => (controller.prototype as Record<string, unknown>)[name])
    .filter((method): method is object => typeof method === 'function' && Reflect.getMetadata(METHOD_METADATA, method) === RequestMethod.POST)
    .map((method): [string, string] => [String(Reflect.getMetadata(PATH_METADATA, method)).replace(/^\/?api\//, ''), String(Reflect.getMetadata(ACTION_KIND_METADATA, method))]);
})();

describe('dashboard actions option', () => {
  it('takes a list of known kinds, naming the option and the unknown kind otherwise', () => {
    const base = { readOnly: false, guard: OperatorGuard };
    expect(optionError(() => RedisStreamsDashboardModule.forRoot({ ...base, actions: 'redrive' as never })).option).toBe('actions');
    const unknown = optionError(() => RedisStreamsDashboardModule.forRoot({ ...base, actions: ['redrive', 'cancle' as never] }));
    expect(unknown.option).toBe('actions[1]');
    expect(unknown.message).toContain('unknown action kind "cancle"');
    expect(unknown.message).toContain(ACTION_KINDS.join(', '));
  });

  it('refuses a mutation route that declares no kind', () => {
    expect(actionRefusal(undefined, new Set(ACTION_KINDS))).toMatch(/declares no action kind/);
    expect(actionRefusal('purge', new Set(['redrive']))).toBe('action "purge" is not allowed (RedisStreamsDashboardModule actions: redrive)');
  });
});

describe('dashboard per-action permissions over HTTP (Express and Fastify)', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  it('without a list every kind is allowed, and the session says so', async () => {
    const app = await dashboard.start({ readOnly: false, guard: OperatorGuard });
    const session = (await getJson<DashboardSession>(app, 'session')).body;
    expect(session).toMatchObject({ readOnly: false, actions: [...ACTION_KINDS], refusedActions: [] });
  });

  it('read-only: no kind is allowed, whatever the list says', async () => {
    const app = await dashboard.start({ actions: ['redrive'] });
    expect((await getJson<DashboardSession>(app, 'session')).body).toMatchObject({ readOnly: true, actions: [], refusedActions: [...ACTION_KINDS] });
  });

  for (const adapter of ADAPTERS) {
    it(`${adapter}: serves the kinds listed and refuses the others with 403 naming the kind and the option, changing nothing`, async () => {
      const [first, second] = await seedStream(redis.client, HANDLED_STREAM, { entries: 4, pending: 1, deadLetters: 2 });
      const app = await dashboard.start({ readOnly: false, guard: OperatorGuard, actions: ['redrive', 'ack'] }, adapter);
      const session = (await getJson<DashboardSession>(app, 'session')).body;
      expect(session.actions).toEqual(['redrive', 'ack']);
      expect(session.refusedActions).toEqual(ACTION_KINDS.filter((kind) => kind !== 'redrive' && kind !== 'ack'));
      // Every route has its kind, among the known ones.
      expect(MUTATIONS.length).toBeGreaterThanOrEqual(14);
      for (const [path, kind] of MUTATIONS) expect(ACTION_KINDS, path).toContain(kind);
      const token = await csrfToken(app);

      for (const [path, kind] of MUTATIONS.filter(([, kind]) => kind !== 'redrive' && kind !== 'ack')) {
        const refused = await postJson<{ message: string; reason: string }>(app, path, { stream: HANDLED_STREAM, group: AUDIT_GROUP, ids: [first] }, token);
        expect(refused.status, path).toBe(403);
        expect(refused.body.message).toBe(`action "${kind}" is not allowed (RedisStreamsDashboardModule actions: redrive, ack)`);
        expect(refused.body.reason).toBe('action-not-allowed');
      }
      expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(2);
      expect(await redis.client.exists(`{${HANDLED_STREAM}}:paused`)).toBe(0);
      expect(app.logger.lines).toContain('refused "/streams/api/dead-letters/purge": action "purge" is not allowed (RedisStreamsDashboardModule actions: redrive, ack)');

      const redriven = await postJson<{ redriven: unknown[] }>(app, 'dead-letters/redrive', { stream: HANDLED_STREAM, ids: [second] }, token);
      expect(redriven.status).toBe(200);
      expect(redriven.body.redriven).toHaveLength(1);
      expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(1);
    });
  }

  it('an empty list refuses every mutation, each naming its kind', async () => {
    const app = await dashboard.start({ readOnly: false, guard: OperatorGuard, actions: [] });
    const token = await csrfToken(app);
    for (const [path, kind] of MUTATIONS) {
      const refused = await postJson<{ message: string }>(app, path, { stream: HANDLED_STREAM }, token);
      expect(refused.status, path).toBe(403);
      expect(refused.body.message).toBe(`action "${kind}" is not allowed (RedisStreamsDashboardModule actions: none)`);
    }
  });
});
