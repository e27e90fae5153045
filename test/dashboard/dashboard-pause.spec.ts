import { describe, expect, it } from 'vitest';
import type { OverviewView } from '../../src/dashboard/dashboard-views.js';
import { pausedKey } from '../../src/flow/flow-keys.js';
import { pauseGroup } from '../../src/flow/pause-state.js';
import { partitionStreamKey } from '../../src/partitions/partition-keys.js';
import { HANDLED_STREAM, PARTITIONED_STREAM, type DashboardApp } from '../helpers/dashboard-app.js';
import { OPERATOR, OperatorGuard } from '../helpers/dashboard-http.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url, { headers: OPERATOR, signal: AbortSignal.timeout(5_000) });
  expect(response.status).toBe(200);
  return (await response.json()) as T;
}

async function post(url: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, { method: 'POST', headers: { ...OPERATOR, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal: AbortSignal.timeout(5_000) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** `[stream, group, paused]` of every group the overview shows, partitions included. */
function pausedFlags(view: OverviewView): [string, string, boolean][] {
  return view.streams.flatMap((stream) =>
    [stream, ...(stream.partitions ?? [])].flatMap((one) => one.groups.map((group): [string, string, boolean] => [one.name, group.name, group.paused])),
  );
}

/** The page's Pause / Resume buttons: dashboard-pause-browser.spec.ts. */
describe('dashboard: paused groups and the pause / resume actions (HTTP)', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  it("shows each group's pause state, a partitioned stream's on its total and every partition", async () => {
    const app = await dashboard.start({}, 'express', { partitioned: true });
    await pauseGroup(redis.client, PARTITIONED_STREAM, 'billing');
    const since = new Date(Number(await redis.client.hget(pausedKey(PARTITIONED_STREAM), 'billing'))).toISOString();
    const view = await getJson<OverviewView>(`${app.page}/api/overview`);
    expect(pausedFlags(view)).toEqual([
      [HANDLED_STREAM, 'billing', false],
      [PARTITIONED_STREAM, 'billing', true],
      [partitionStreamKey(PARTITIONED_STREAM, 0), 'billing', true],
      [partitionStreamKey(PARTITIONED_STREAM, 1), 'billing', true],
    ]);
    expect(view.streams[1]!.groups[0]).toMatchObject({ paused: true, pausedAt: since });
    expect(view.streams[0]!.groups[0]).toMatchObject({ paused: false, pausedAt: null });
  });

  it('read-only by default: pause and resume refused with 403, nothing written', async () => {
    const app = await dashboard.start();
    for (const path of ['groups/pause', 'groups/resume']) {
      const refused = await post(`${app.page}/api/${path}`, { stream: HANDLED_STREAM, group: 'billing' }, {});
      expect(refused.status, path).toBe(403);
      expect(refused.body.message).toMatch(/read-only/);
    }
    expect(await redis.client.exists(pausedKey(HANDLED_STREAM))).toBe(0);
  });

  it('pauses and resumes behind the same guards as every action (app guard, CSRF, same origin), logged; a partition key is a 400', async () => {
    const app = await dashboard.start({ readOnly: false, guard: OperatorGuard }, 'express', { partitioned: true });
    const session = await getJson<{ csrfToken: string }>(`${app.page}/api/session`);
    const token = { 'x-csrf-token': session.csrfToken };
    const pause = `${app.page}/api/groups/pause`;
    const body = { stream: HANDLED_STREAM, group: 'billing' };
    expect((await post(pause, body, {})).status).toBe(403);
    expect((await post(pause, body, { ...token, 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await post(pause, body, { ...token, origin: 'http://evil.example' })).status).toBe(403);
    expect((await post(pause, body, { ...token, 'x-operator': 'no' })).status).toBe(403);
    expect(await redis.client.exists(pausedKey(HANDLED_STREAM))).toBe(0);

    expect(await post(pause, body, token)).toEqual({ status: 200, body: { stream: HANDLED_STREAM, group: 'billing', paused: true, changed: true } });
    expect((await post(pause, body, token)).body).toMatchObject({ paused: true, changed: false });
    expect(await redis.client.hexists(pausedKey(HANDLED_STREAM), 'billing')).toBe(1);
    // The worker of the app sees it: its reader stops.
    await waitFor(() => (app as DashboardApp).app.getMicroservices().length > 0 && pausedOfWorker(app as DashboardApp), 'the worker to see the pause', { timeout: 10_000 });
    expect((await post(`${app.page}/api/groups/resume`, body, token)).body).toMatchObject({ paused: false, changed: true });
    expect(await redis.client.exists(pausedKey(HANDLED_STREAM))).toBe(0);

    const partition = await post(pause, { stream: partitionStreamKey(PARTITIONED_STREAM, 1), group: 'billing' }, token);
    expect(partition.status).toBe(400);
    expect(partition.body.message).toContain(`is partition 1 of ${PARTITIONED_STREAM}`);
    expect((await post(pause, { stream: HANDLED_STREAM }, token)).status).toBe(400);

    expect(app.logger.lines.filter((line) => /^(pause|resume) group/.test(line))).toEqual([
      `pause group: stream "${HANDLED_STREAM}", group "billing": paused`,
      `pause group: stream "${HANDLED_STREAM}", group "billing": already paused`,
      `resume group: stream "${HANDLED_STREAM}", group "billing": resumed`,
      `pause group: stream "${partitionStreamKey(PARTITIONED_STREAM, 1)}", group "billing": failed: Invalid option "stream": ${partitionStreamKey(PARTITIONED_STREAM, 1)} is partition 1 of ${PARTITIONED_STREAM}: pause or resume ${PARTITIONED_STREAM}, for every partition`,
    ]);
  });
});

/** Whether the app's RedisStreamsServer reports the handled stream's group paused (its liveness). */
function pausedOfWorker(app: DashboardApp): boolean {
  const server = (app.app.getMicroservices()[0] as unknown as { serverInstance: { liveness(): { streams: { stream: string; paused: boolean }[] } } }).serverInstance;
  return server.liveness().streams.some((stream) => stream.stream === HANDLED_STREAM && stream.paused);
}
