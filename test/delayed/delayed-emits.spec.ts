import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord, RedisStreamsRecordBuilder } from '../../src/client/redis-streams-record.js';
import { delayedKeys } from '../../src/delayed/delayed-keys.js';
import { holdEntry, holdHead } from '../../src/delayed/hold.js';
import { promoteDue } from '../../src/delayed/promote.js';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { hashSlotOf } from '../../src/redis/keys.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import type { RedisStreamsServerOptions } from '../../src/server/options.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { redisNow } from '../../src/redis/server-time.js';
import { optionError, UNCONTACTED_SERVER } from '../helpers/option-errors.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

type Entry = [id: string, fields: string[]];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const handled: { id: string; data: unknown; deliveryCount: number }[] = [];

@Controller()
class DelayedController {
  @EventPattern<string>('later')
  onLater(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    handled.push({ id: ctx.getId(), data, deliveryCount: ctx.getDeliveryCount() });
  }
}

describe('delayed emits (RedisStreamsRecord delay / deliverAt)', () => {
  const redis = useRedisServer();
  const clients: RedisStreamsClient[] = [];
  const running: RunningServer[] = [];
  const client = (options: ConstructorParameters<typeof RedisStreamsClient>[0] = {}) => {
    const created = new RedisStreamsClient({ connection: redis.server.url, ...options });
    clients.push(created);
    return created;
  };
  const serverMs = () => redisNow(redis.client);
  const emitError = async (emitted: Promise<unknown>): Promise<RedisStreamsOptionError> => {
    const error = await emitted.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(RedisStreamsOptionError);
    return error as RedisStreamsOptionError;
  };

  afterEach(async () => {
    for (const r of running.splice(0)) await r.app.close();
    handled.length = 0;
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
  });

  it('holds the entry next to the stream, due on Redis clock after the delay; the emit resolves with the hold id', async () => {
    const c = client();
    const before = await serverMs();
    const hold = await lastValueFrom(c.emit('held', new RedisStreamsRecord({ n: 1 }, { delay: 'PT1M' })));
    const after = await serverMs();
    expect(hold).toMatch(UUID);
    expect(await redis.client.exists('held')).toBe(0);
    const keys = delayedKeys('held');
    expect(keys).toEqual({ schedule: '{held}:delayed', bodies: '{held}:delayed-bodies', recurring: '{held}:delayed-recurring', promoted: '{held}:delayed-promoted', promotedAt: '{held}:delayed-promoted-at' });
    const due = Number(await redis.client.zscore(keys.schedule, hold as string));
    expect(due).toBeGreaterThanOrEqual(before + 60_000);
    expect(due).toBeLessThanOrEqual(after + 60_000);
    expect(await redis.client.hexists(keys.bodies, hold as string)).toBe(1);
    // Not due: a promotion moves nothing and tells when the next one is due.
    const result = await promoteDue(redis.client, 'held');
    expect(result.promoted).toEqual([]);
    expect(result.nextDueMs).toBe(due);
    expect(await redis.client.exists('held')).toBe(0);
  });

  it('keys of a hash-tagged stream keep its tag (one slot, Cluster-safe)', () => {
    for (const stream of ['orders', '{orders}:eu', 'orders:p3', '{orders}']) {
      const { schedule, bodies } = delayedKeys(stream);
      expect([hashSlotOf(schedule), hashSlotOf(bodies)]).toEqual([hashSlotOf(stream), hashSlotOf(stream)]);
      expect(schedule).not.toBe(bodies);
    }
    expect(delayedKeys('{orders}:eu').schedule).toBe('{orders}:eu:delayed');
  });

  it('a promoted entry carries exactly the fields the emit would have written, and the hold is gone', async () => {
    const c = client();
    const headers = { tenant: 'acme' };
    await lastValueFrom(c.emit('same', new RedisStreamsRecord({ item: 'kettle' }, { headers })));
    const hold = await lastValueFrom(c.emit('same', new RedisStreamsRecord({ item: 'kettle' }, { headers, deliverAt: new Date(0) })));
    const raw = Buffer.from([0xff, 0x00, 0xfe]);
    const rawHold = await lastValueFrom(c.emit('same', new RedisStreamsRecord({ bytes: raw, qty: 2 }, { raw: true, deliverAt: Date.now() - 1 })));
    const result = await promoteDue(redis.client, 'same');
    expect(result.promoted.map((row) => row.hold).sort()).toEqual([hold, rawHold].sort());
    const entries = (await redis.client.xrange('same', '-', '+')) as Entry[];
    expect(entries).toHaveLength(3);
    expect(entries[1]?.[1]).toEqual(entries[0]?.[1]);
    const rawEntry = (await redis.client.xrangeBuffer('same', entries[2]?.[0] as string, '+')) as unknown as [Buffer, Buffer[]][];
    expect(rawEntry[0]?.[1].map((part) => part.toString('hex'))).toEqual(['bytes', raw, 'qty', '2'].map((part) => Buffer.from(part as string).toString('hex')));
    expect(result.promoted.find((row) => row.hold === rawHold)?.id).toBe(entries[2]?.[0]);
    const keys = delayedKeys('same');
    expect([await redis.client.exists(keys.schedule), await redis.client.exists(keys.bodies)]).toEqual([0, 0]);
  });

  it('the promotion trims the stream as the emit would (maxLen, maxAge on Redis clock)', async () => {
    const c = client();
    for (let n = 0; n < 5; n++) await redis.client.xadd('trimmed', '*', 'n', String(n));
    await lastValueFrom(c.emit('trimmed', new RedisStreamsRecord('x', { trim: { maxLen: 2, exact: true }, deliverAt: 0 })));
    await promoteDue(redis.client, 'trimmed');
    expect(await redis.client.xlen('trimmed')).toBe(2);
    await redis.client.xadd('aged', '1-1', 'n', 'old');
    await lastValueFrom(c.emit('aged', new RedisStreamsRecord('x', { trim: { maxAge: 60_000, exact: true }, deliverAt: 0 })));
    await promoteDue(redis.client, 'aged');
    const ids = ((await redis.client.xrange('aged', '-', '+')) as Entry[]).map(([id]) => id);
    expect(ids).toHaveLength(1);
    expect(ids[0]).not.toBe('1-1');
  });

  it('one call moves at most its limit, oldest due first; the rest on the next calls', async () => {
    const c = client();
    const holds: string[] = [];
    for (let n = 0; n < 250; n++) holds.push((await lastValueFrom(c.emit('paged', new RedisStreamsRecord({ n }, { deliverAt: 1_000 + n })))) as string);
    const first = await promoteDue(redis.client, 'paged', 100);
    expect([first.promoted.length, first.full]).toEqual([100, true]);
    expect(first.promoted.map((row) => row.hold)).toEqual(holds.slice(0, 100));
    const second = await promoteDue(redis.client, 'paged', 100);
    const third = await promoteDue(redis.client, 'paged', 100);
    expect([second.promoted.length, third.promoted.length, third.full, third.nextDueMs]).toEqual([100, 50, false, undefined]);
    const data = ((await redis.client.xrange('paged', '-', '+')) as Entry[]).map(([, fields]) => JSON.parse(fields[3] as string) as { n: number });
    expect(data.map(({ n }) => n)).toEqual(Array.from({ length: 250 }, (_, n) => n));
  });

  it('an XADD failing mid-page ends the call with its error: the entries before it are moved and their holds gone, it and the rest stay held', async () => {
    const stream = 'midpage';
    const head = (hold: string, dueMs: number, amount: number) =>
      holdHead(hold, { mode: 'at', ms: dueMs }, { noMkStream: false, trim: 'maxLen', operator: '~', amount, onlyAcked: false }, undefined);
    await holdEntry(redis.client, stream, [...head('first', 1_000, 100), 'pattern', stream, 'data', '1']);
    await holdEntry(redis.client, stream, [...head('second', 2_000, 100), 'pattern', stream, 'data', '2']);
    await holdEntry(redis.client, stream, [...head('third', 3_000, 100), 'pattern', stream, 'data', '3']);
    // The second's body asks for MAXLEN ~ "lots": its XADD fails ("not an integer").
    const { schedule, bodies } = delayedKeys(stream);
    const packed = await redis.client.hgetBuffer(bodies, 'second');
    const setAmount = "local w = cmsgpack.unpack(redis.call('HGET', KEYS[1], ARGV[1])); w[4] = ARGV[2]; redis.call('HSET', KEYS[1], ARGV[1], cmsgpack.pack(w))";
    await redis.client.eval(setAmount, 1, bodies, 'second', 'lots');
    await expect(promoteDue(redis.client, stream)).rejects.toThrow(/not an integer/);
    const added = (await redis.client.xrange(stream, '-', '+')) as Entry[];
    expect(added.map(([, fields]) => fields[3])).toEqual(['1']);
    expect(await redis.client.zrange(schedule, 0, -1)).toEqual(['second', 'third']);
    expect((await redis.client.hkeys(bodies)).sort()).toEqual(['second', 'third']);
    // Fixed, the next call moves the rest, once each.
    await redis.client.hset(bodies, 'second', packed!);
    expect((await promoteDue(redis.client, stream)).promoted.map((p) => p.hold)).toEqual(['second', 'third']);
    expect(((await redis.client.xrange(stream, '-', '+')) as Entry[]).map(([, fields]) => fields[3])).toEqual(['1', '2', '3']);
  });

  it('noMkStream: a promotion finding no stream writes nothing and drops the hold', async () => {
    const c = client();
    const hold = await lastValueFrom(c.emit('absent', new RedisStreamsRecord('x', { noMkStream: true, deliverAt: 0 })));
    const result = await promoteDue(redis.client, 'absent');
    expect(result.skipped).toEqual([{ hold, status: 'dropped' }]);
    expect(await redis.client.exists('absent', ...Object.values(delayedKeys('absent')))).toBe(0);
  });

  it('a worker of the stream promotes it when due and its handler gets it once, not before it was due', async () => {
    running.push(await startServer({ connection: redis.server.url, group: 'g', consumer: 'w1', delayed: { interval: 100 } }, [DelayedController]));
    const c = client();
    const hold = (await lastValueFrom(c.emit('later', new RedisStreamsRecord({ n: 7 }, { delay: 300 })))) as string;
    const due = Number(await redis.client.zscore(delayedKeys('later').schedule, hold));
    await waitFor(() => handled.length === 1, 'the delayed entry handled');
    expect(handled[0]?.data).toEqual({ n: 7 });
    expect(handled[0]?.deliveryCount).toBe(1);
    // The entry id's time part is Redis' clock at the XADD: never before the due time.
    expect(Number(handled[0]?.id.split('-')[0])).toBeGreaterThanOrEqual(due);
    expect(await redis.client.zcard(delayedKeys('later').schedule)).toBe(0);
    expect(await redis.client.xlen('later')).toBe(1);
  });

  it('a promotion that fails (the stream key is no stream) keeps the hold, reports one error per outage, and succeeds once fixed', async () => {
    const errors: Error[] = [];
    running.push(
      await startServer({ connection: redis.server.url, group: 'g', consumer: 'w3', streamPrefix: 'broken:', delayed: { interval: 30 } }, [DelayedController], [], (server) =>
        server.on('error', (error: Error) => errors.push(error)),
      ),
    );
    const c = client({ streamPrefix: 'broken:' });
    await redis.client.del('broken:later');
    await redis.client.set('broken:later', 'not a stream');
    const hold = (await lastValueFrom(c.emit('later', new RedisStreamsRecord({ n: 9 }, { deliverAt: 0 })))) as string;
    await waitFor(() => errors.length > 0, 'the failure reported');
    // Several rounds fail meanwhile (each round re-reads the schedule): still one report, and the hold stays.
    const { schedule } = delayedKeys('broken:later');
    await waitFor(async () => (await redis.client.zscore(schedule, hold)) !== null && errors.length === 1, 'the hold kept');
    // Redis 6.2 wraps errors inside a script ("ERR Error running script … WRONGTYPE …").
    expect(errors[0]?.message).toMatch(/promotion of delayed entries failed .*"broken:later": .*WRONGTYPE/);
    await redis.client.del('broken:later');
    // The worker's reader may recreate the group first (it does on NOGROUP): either is fine.
    await redis.client.xgroup('CREATE', 'broken:later', 'g', '0', 'MKSTREAM').catch((error: Error) => {
      if (!error.message.startsWith('BUSYGROUP')) throw error;
    });
    await waitFor(() => handled.some((entry) => (entry.data as { n?: number }).n === 9), 'the entry promoted and handled once fixed', { timeout: 15_000 });
    expect(await redis.client.zcard(schedule)).toBe(0);
    expect(errors).toHaveLength(1);
  });

  it('a held entry goes into the stream once: every group reading it gets it (one of the workers promotes nothing)', async () => {
    running.push(await startServer({ connection: redis.server.url, group: 'g', consumer: 'w2', streamPrefix: 'off:', delayed: false }, [DelayedController]));
    const c = client({ streamPrefix: 'off:' });
    await lastValueFrom(c.emit('later', new RedisStreamsRecord({ n: 1 }, { deliverAt: 0 })));
    const promoter = await startServer({ connection: redis.server.url, group: 'other', consumer: 'p', streamPrefix: 'off:', delayed: { interval: 50 } }, [DelayedController]);
    running.push(promoter);
    await waitFor(() => handled.length >= 1, 'the promoting worker delivers it');
    await waitFor(() => handled.length === 2, 'both groups handle the one promoted entry');
    expect(await redis.client.xlen('off:later')).toBe(1);
  });

  it('rejects bad delay / deliverAt values, both at once, and a delay with idempotencyKey, naming the option', async () => {
    const c = client();
    const bad: [RedisStreamsRecord, string, RegExp][] = [
      [new RedisStreamsRecord(1, { delay: 'soon' }), 'delay', /ISO-8601/],
      [new RedisStreamsRecord(1, { delay: 0 }), 'delay', /at least 1 millisecond/],
      [new RedisStreamsRecord(1, { delay: 'P1M' }), 'delay', /months have no fixed length/],
      [new RedisStreamsRecord(1, { deliverAt: new Date('nope') }), 'deliverAt', /valid Date/],
      [new RedisStreamsRecord(1, { deliverAt: '2030-01-01' as unknown as Date }), 'deliverAt', /valid Date/],
      [new RedisStreamsRecord(1, { delay: 10, deliverAt: new Date() }), 'delay', /not both/],
      [new RedisStreamsRecord(1, { delay: 10, idempotencyKey: 'k' }), 'delay', /idempotencyKey/],
    ];
    for (const [record, option, message] of bad) {
      const error = await emitError(lastValueFrom(c.emit('invalid', record)));
      expect([error.option, error.message]).toEqual([option, expect.stringMatching(message)]);
    }
    expect(await redis.client.exists('invalid', ...Object.values(delayedKeys('invalid')))).toBe(0);
  });

  it('send() with a delay is refused, naming delay (a request waits for its reply: documented)', async () => {
    const c = client();
    const error = await emitError(lastValueFrom(c.send('ask', new RedisStreamsRecord(1, { delay: 1_000 }))));
    expect(error.option).toBe('delay');
    expect(error.message).toMatch(/emit\(\) only/);
    const at = await emitError(lastValueFrom(c.send('ask', new RedisStreamsRecordBuilder(1).setDeliverAt(new Date()).build())));
    expect(at.option).toBe('deliverAt');
    expect(await redis.client.exists('ask')).toBe(0);
  });

  it('validates the server option delayed, naming the field', () => {
    const cases: [unknown, string][] = [
      [{ interval: 'soon' }, 'delayed.interval'],
      [{ batch: 0 }, 'delayed.batch'],
      [{ batch: 1001 }, 'delayed.batch'],
      [{ maxPages: 1.5 }, 'delayed.maxPages'],
      [{ every: 1 }, 'delayed.every'],
      [true, 'delayed'],
    ];
    for (const [delayed, option] of cases) {
      const error = optionError(() => new RedisStreamsServer({ ...UNCONTACTED_SERVER, delayed } as RedisStreamsServerOptions));
      expect(error.option).toBe(option);
    }
  });

  it('the builder sets delay and deliverAt', () => {
    const at = new Date(5);
    expect(new RedisStreamsRecordBuilder(1).setDelay('PT5S').build().options).toEqual({ delay: 'PT5S' });
    expect(new RedisStreamsRecordBuilder(1).setDeliverAt(at).build().options).toEqual({ deliverAt: at });
  });
});
