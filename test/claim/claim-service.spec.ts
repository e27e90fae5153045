import { readFile, rm } from 'node:fs/promises';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RedisStreamsClaimError } from '../../src/claim/claim.errors.js';
import { StreamClaimService } from '../../src/module/claim-services.js';
import { capabilitiesOf } from '../helpers/capabilities.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { addEntries, createGroup, deliver, makeIdle, MIN_IDLE, pendingById } from '../helpers/claim-fixtures.js';

const KEY = 'orders';
const GROUP = 'billing';
const WORKER = 'worker-1';
const RECOVERY = 'billing_recovery';

describe('StreamClaimService.claim against redis-server', () => {
  const redis = useRedisServer();
  let service: StreamClaimService;
  const storeDirectory = mkdtempSync(join(tmpdir(), 'nrs-claim-store-'));

  beforeAll(() => {
    service = new StreamClaimService(redis.client, { storeDirectory });
  });
  afterAll(async () => {
    await rm(storeDirectory, { recursive: true, force: true });
  });
  beforeEach(async () => {
    await redis.client.flushall();
    await createGroup(redis.client, KEY, GROUP);
  });

  /** `n` entries delivered to WORKER and made idle for an hour. */
  async function idleEntries(n: number): Promise<string[]> {
    await addEntries(redis.client, KEY, n);
    const ids = await deliver(redis.client, KEY, GROUP, WORKER);
    await makeIdle(redis.client, KEY, GROUP, WORKER, ids);
    return ids;
  }

  it('takes only entries idle for minIdleTime; they move to the new consumer with delivery count + 1', async () => {
    const idle = await idleEntries(3);
    await addEntries(redis.client, KEY, 2, 100);
    const fresh = await deliver(redis.client, KEY, GROUP, WORKER);

    const result = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE });

    expect(result.ids).toEqual(idle);
    expect(result.count).toBe(3);
    expect(result.completed).toBe(true);
    expect(result.cursor).toBe('0-0');
    expect(result.pages).toBe(1);
    const pel = await pendingById(redis.client, KEY, GROUP);
    for (const id of idle) expect(pel.get(id)).toEqual({ id, consumer: RECOVERY, deliveryCount: 2 });
    for (const id of fresh) expect(pel.get(id)).toEqual({ id, consumer: WORKER, deliveryCount: 1 });
  });

  it('FETCH returns { stream, id, fields } exactly as stored, __proto__ and constructor included', async () => {
    const id = (await redis.client.xadd(KEY, '*', '__proto__', '{"polluted":true}', 'constructor', 'c', 'qty', '01', 'empty', '')) as string;
    await deliver(redis.client, KEY, GROUP, WORKER);
    await makeIdle(redis.client, KEY, GROUP, WORKER, [id]);

    const result = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE });

    expect(result.messages).toHaveLength(1);
    const message = result.messages[0]!;
    expect(message.stream).toBe(KEY);
    expect(message.id).toBe(id);
    expect(Object.keys(message.fields)).toEqual(['__proto__', 'constructor', 'qty', 'empty']);
    expect(message.fields['__proto__']).toBe('{"polluted":true}');
    expect(message.fields['qty']).toBe('01');
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    const json = JSON.parse(JSON.stringify(result)) as typeof result;
    expect(Object.keys(json.messages[0]!.fields)).toEqual(['__proto__', 'constructor', 'qty', 'empty']);
    expect(Object.getOwnPropertyDescriptor(json.messages[0]!.fields, '__proto__')?.value).toBe('{"polluted":true}');
  });

  it('result shapes: FETCH messages, FETCH_ONE message (forced to one), NONE ids only', async () => {
    const ids = await idleEntries(5);

    const one = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE, fetchType: 'FETCH_ONE', count: 50, maxRecords: 50 });
    expect(Object.keys(one)).toEqual(['key', 'group', 'consumer', 'count', 'ids', 'message', 'cursor', 'completed', 'pages', 'deletedIds', 'deletedCount']);
    expect(one).toMatchObject({ key: KEY, group: GROUP, consumer: RECOVERY, count: 1, ids: [ids[0]], cursor: ids[1], completed: false, pages: 1 });
    expect(one.message).toEqual({ stream: KEY, id: ids[0], fields: { n: '0' } });

    const none = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE, fetchType: 'NONE', startId: one.cursor });
    expect(Object.keys(none)).toEqual(['key', 'group', 'consumer', 'count', 'ids', 'cursor', 'completed', 'pages', 'deletedIds', 'deletedCount']);
    expect(none).toMatchObject({ count: 4, ids: ids.slice(1), cursor: '0-0', completed: true });
    // NONE claims like FETCH: the delivery count rose and the entries changed owner.
    const pel = await pendingById(redis.client, KEY, GROUP);
    for (const id of ids) expect(pel.get(id)).toMatchObject({ consumer: RECOVERY, deliveryCount: 2 });

    const nothing = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE, fetchType: 'FETCH_ONE' });
    expect(nothing).toMatchObject({ count: 0, ids: [], message: null, completed: true, cursor: '0-0' });

    const fetch = await service.claim({ key: KEY, group: GROUP, consumer: 'other', minIdleTime: 1, maxRecords: 2 });
    expect(Object.keys(fetch)).toEqual(['key', 'group', 'consumer', 'count', 'ids', 'messages', 'cursor', 'completed', 'pages', 'deletedIds', 'deletedCount']);
  });

  it('STORE writes an NDJSON file holding exactly the entries of ids, and returns its file:// uri', async () => {
    const ids = await idleEntries(250);
    await redis.client.xadd(KEY, '*', '__proto__', 'p', 'constructor', 'c');
    const [special] = await deliver(redis.client, KEY, GROUP, WORKER);
    await makeIdle(redis.client, KEY, GROUP, WORKER, [special!]);

    const result = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE, fetchType: 'STORE', count: 100, maxRecords: 1000 });

    expect(result.ids).toEqual([...ids, special]);
    expect(result.uri.startsWith('file://')).toBe(true);
    const path = fileURLToPath(result.uri);
    expect(path.startsWith(storeDirectory)).toBe(true);
    expect('messages' in result).toBe(false);
    const lines = (await readFile(path, 'utf8')).split('\n');
    expect(lines.pop()).toBe('');
    const stored = lines.map((line) => JSON.parse(line) as { stream: string; id: string; fields: Record<string, string> });
    expect(stored.map((m) => m.id)).toEqual(result.ids);
    expect(stored[0]).toEqual({ stream: KEY, id: ids[0], fields: { n: '0' } });
    expect(Object.keys(stored.at(-1)!.fields)).toEqual(['__proto__', 'constructor']);
  });

  it('a pending list with thousands of fresh entries before a few idle ones: empty pages, then resume from cursor', async () => {
    await addEntries(redis.client, KEY, 2000);
    const fresh = await deliver(redis.client, KEY, GROUP, WORKER);
    const idle = await idleEntries(5);

    // One page examines at most COUNT × 10 pending entries: 100 here, so 20 pages of fresh ones.
    const single = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE, count: 10, maxPages: 1 });
    expect(single).toMatchObject({ count: 0, ids: [], messages: [], pages: 1, completed: false });
    expect(single.cursor).not.toBe('0-0');

    const runs = [];
    let cursor = '0-0';
    for (let run = 0; run < 10; run++) {
      const result = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE, count: 10, maxPages: 7, startId: cursor, fetchType: 'NONE' });
      runs.push(result);
      cursor = result.cursor;
      if (result.completed) break;
    }
    const last = runs.at(-1)!;
    expect(runs.length).toBe(3); // 7 + 7 pages over 1400 fresh entries, the third run reaches the end
    for (const result of runs.slice(0, -1)) {
      expect(result).toMatchObject({ count: 0, completed: false, pages: 7 });
      expect(result.cursor).not.toBe('0-0');
    }
    expect(BigInt(runs[0]!.cursor.split('-')[0]!) <= BigInt(runs[1]!.cursor.split('-')[0]!)).toBe(true);
    expect(runs[0]!.cursor).toBe(fresh[700]);
    expect(runs[1]!.cursor).toBe(fresh[1400]);
    expect(last).toMatchObject({ ids: idle, count: 5, completed: true, cursor: '0-0' });
    const pel = await pendingById(redis.client, KEY, GROUP);
    expect(fresh.every((id) => pel.get(id)?.consumer === WORKER && pel.get(id)?.deliveryCount === 1)).toBe(true);
  });

  it('maxRecords stops a run with the right cursor; the last page COUNT is lowered to the remaining budget', async () => {
    const ids = await idleEntries(25);
    const first = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE, count: 10, maxRecords: 15 });
    expect(first).toMatchObject({ count: 15, ids: ids.slice(0, 15), cursor: ids[15], completed: false, pages: 2 });
    const rest = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE, count: 10, startId: first.cursor });
    expect(rest).toMatchObject({ count: 10, ids: ids.slice(15), cursor: '0-0', completed: true, pages: 1 });
  });

  it('maxPages stops a run with the right cursor; reaching the end on the last page is completed', async () => {
    const ids = await idleEntries(25);
    const first = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE, count: 10, maxPages: 2 });
    expect(first).toMatchObject({ count: 20, ids: ids.slice(0, 20), cursor: ids[20], completed: false, pages: 2 });

    await redis.client.flushall();
    await createGroup(redis.client, KEY, GROUP);
    const exact = await idleEntries(20);
    const done = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE, count: 10, maxPages: 2 });
    expect(done).toMatchObject({ count: 20, ids: exact, cursor: '0-0', completed: true, pages: 2 });
  });

  it('defaults: maxRecords 100 with pages of 100; maxPages 10', async () => {
    const ids = await idleEntries(150);
    const byRecords = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE });
    expect(byRecords).toMatchObject({ count: 100, ids: ids.slice(0, 100), pages: 1, cursor: ids[100], completed: false });

    await redis.client.flushall();
    await createGroup(redis.client, KEY, GROUP);
    await addEntries(redis.client, KEY, 1200);
    const fresh = await deliver(redis.client, KEY, GROUP, WORKER);
    // count 1 → 10 examined per page; the default 10 pages examine 100.
    const byPages = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE, count: 1 });
    expect(byPages).toMatchObject({ count: 0, pages: 10, cursor: fresh[100], completed: false });
  });

  it('the largest budgets are accepted by Redis (count 10000, maxRecords 10000, maxPages 1000)', async () => {
    const ids = await idleEntries(30);
    const result = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: 1, count: 10_000, maxRecords: 10_000, maxPages: 1_000, fetchType: 'NONE' });
    expect(result).toMatchObject({ count: 30, ids, pages: 1, completed: true });
  });

  it('entries deleted or trimmed while pending land in deletedIds / deletedCount, not in messages', async () => {
    // Redis 7.0+ drops and reports them; 6.2 (no lagTracking) keeps them pending and reports nothing (docs/claim.md).
    const { lagTracking } = await capabilitiesOf(redis.client);
    const ids = await idleEntries(10);
    await redis.client.xdel(KEY, ids[2]!, ids[5]!);
    const result = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE });
    expect(result.deletedIds).toEqual(lagTracking ? [ids[2], ids[5]] : []);
    expect(result.deletedCount).toBe(lagTracking ? 2 : 0);
    expect(result.ids).toEqual(ids.filter((_, i) => i !== 2 && i !== 5));
    expect(result.messages.map((m) => m.id)).toEqual(result.ids);
    const pel = await pendingById(redis.client, KEY, GROUP);
    expect(pel.has(ids[2]!)).toBe(!lagTracking);
    expect(pel.has(ids[5]!)).toBe(!lagTracking);

    await redis.client.xtrim(KEY, 'MAXLEN', 0);
    const trimmed = await service.claim({ key: KEY, group: GROUP, consumer: 'again', minIdleTime: 1 });
    expect(trimmed).toMatchObject({ count: 0, ids: [], messages: [], deletedCount: lagTracking ? 8 : 0, completed: true });
    expect(trimmed.deletedIds).toEqual(lagTracking ? result.ids : []);
    expect((await pendingById(redis.client, KEY, GROUP)).size).toBe(lagTracking ? 0 : 10);
  });

  it('deletedIds holds the first 1000, deletedCount all of them across pages', async () => {
    const { lagTracking } = await capabilitiesOf(redis.client);
    const ids = await idleEntries(1200);
    await redis.client.xtrim(KEY, 'MAXLEN', 0);
    const result = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE, count: 500, maxRecords: 500, fetchType: 'NONE' });
    // 6.2 (no lagTracking): nothing reported, all 1200 stay pending (docs/claim.md).
    expect(result.deletedCount).toBe(lagTracking ? 1200 : 0);
    expect(result.deletedIds).toEqual(lagTracking ? ids.slice(0, 1000) : []);
    expect(result).toMatchObject({ count: 0, pages: 3, completed: true });
    expect((await pendingById(redis.client, KEY, GROUP)).size).toBe(lagTracking ? 0 : 1200);
  });

  it('a missing group or stream is a clear RedisStreamsClaimError', async () => {
    await addEntries(redis.client, KEY, 1);
    const noGroup = await service.claim({ key: KEY, group: 'nope', consumer: RECOVERY, minIdleTime: MIN_IDLE }).catch((e: unknown) => e);
    expect(noGroup).toBeInstanceOf(RedisStreamsClaimError);
    expect(noGroup).toMatchObject({ reason: 'missing-group', message: 'group "nope" does not exist on stream "orders"' });

    const noStream = await service.claim({ key: 'missing', group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE }).catch((e: unknown) => e);
    expect(noStream).toMatchObject({ reason: 'missing-stream', message: 'stream "missing" does not exist' });

    await redis.client.set('plain', 'x');
    const wrongType = await service.claim({ key: 'plain', group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE, fetchType: 'STORE' }).catch((e: unknown) => e);
    expect(wrongType).toMatchObject({ reason: 'wrong-type' });
  });
});

describe('StreamClaimService.ack against redis-server', () => {
  const redis = useRedisServer();
  let service: StreamClaimService;

  beforeAll(async () => {
    service = new StreamClaimService(redis.client);
    await createGroup(redis.client, KEY, GROUP);
  });

  it('acknowledges claimed ids in batches and counts only those that were pending', async () => {
    await addEntries(redis.client, KEY, 2500);
    const ids = await deliver(redis.client, KEY, GROUP, WORKER);
    await makeIdle(redis.client, KEY, GROUP, WORKER, ids);
    const claimed = await service.claim({ key: KEY, group: GROUP, consumer: RECOVERY, minIdleTime: MIN_IDLE, count: 10_000, maxRecords: 10_000, fetchType: 'NONE' });
    expect(claimed.count).toBe(2500);

    expect(await service.ack(KEY, GROUP, claimed.ids)).toBe(2500);
    expect(await service.ack(KEY, GROUP, claimed.ids.slice(0, 10))).toBe(0);
    expect((await redis.client.xpending(KEY, GROUP))[0]).toBe(0);
  });
});
