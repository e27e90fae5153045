import { lastValueFrom } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { CRON_OCCURRENCES, occurrencesAfter } from '../../src/delayed/cron-rule.js';
import { delayedKeys } from '../../src/delayed/delayed-keys.js';
import { listRecurring, removeDelayed } from '../../src/delayed/delayed-inspection.js';
import { holdEntry, holdHead } from '../../src/delayed/hold.js';
import { promoteDue, refillOccurrences } from '../../src/delayed/promote.js';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { redisNow } from '../../src/redis/server-time.js';
import { weekdayThreeDaysAfter } from '../helpers/cron-far-from-now.js';
import { raceToPromote } from '../helpers/racing-promoters.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

const UTC_DAILY = { expression: '0 2 * * *', timezone: 'UTC' };

describe('recurring emits by cron expression (repeat: { cron, timezone, key })', () => {
  const redis = useRedisServer();
  const clients: RedisStreamsClient[] = [];
  const client = () => {
    const created = new RedisStreamsClient({ connection: redis.server.url });
    clients.push(created);
    return created;
  };
  const serverMs = () => redisNow(redis.client);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
  });

  it('is scheduled at the rule’s next occurrence in its zone, listed with its upcoming occurrences; registering again keeps the schedule', async () => {
    const c = client();
    // Weekly, 2 to 4 days from now: no run falls between the emit and the clock read its due time is checked against.
    const rule = { expression: `30 9 * * ${weekdayThreeDaysAfter(await serverMs(), 'Europe/Berlin')}`, timezone: 'Europe/Berlin' };
    const record = () => new RedisStreamsRecord({ v: 1 }, { repeat: { cron: rule.expression, timezone: rule.timezone, key: 'weekly' } });
    expect(await lastValueFrom(c.emit('cron-reg', record()))).toBe('repeat:weekly');
    const now = await serverMs();
    const [expected] = occurrencesAfter(rule, now, 1);
    const { schedule } = delayedKeys('cron-reg');
    expect(Number(await redis.client.zscore(schedule, 'repeat:weekly'))).toBe(expected);
    await lastValueFrom(c.emit('cron-reg', record()));
    expect(await redis.client.zcard(schedule)).toBe(1);
    const [listed] = await listRecurring(redis.client, 'cron-reg');
    expect(listed?.cron?.expression).toBe(rule.expression);
    expect(listed?.cron?.timezone).toBe(rule.timezone);
    expect(listed?.cron?.upcoming[0]).toBe(new Date(expected as number).toISOString());
    expect(listed?.cron?.upcoming.length).toBeGreaterThanOrEqual(CRON_OCCURRENCES - 2);
    expect(listed?.everyMs).toBeNull();
  });

  it('each due occurrence adds one entry (missed ones are not caught up) and the hold moves to the next', async () => {
    const now = await serverMs();
    // Listed as a producer 3 s behind Redis' clock would: the hold drops the past ones.
    const rule = { expression: '* * * * * *', timezone: 'UTC' };
    const past = [now - 3_000, now - 2_000, now - 1_000];
    const args = holdHead('repeat:s', { mode: 'at', ms: 0 }, { noMkStream: false, trim: 'none', operator: '~', amount: 0, onlyAcked: false }, { cron: rule, occurrences: [...past, now + 60_000] });
    await holdEntry(redis.client, 'cron-due', [...args, 'pattern', 'cron-due', 'data', '{"s":1}']);
    // The hold script dropped the past occurrences: it is due at the future one only.
    expect(Number(await redis.client.zscore(delayedKeys('cron-due').schedule, 'repeat:s'))).toBe(now + 60_000);
    await redis.client.zadd(delayedKeys('cron-due').schedule, 'XX', 0, 'repeat:s');
    const result = await promoteDue(redis.client, 'cron-due');
    expect(result.promoted.map((row) => row.hold)).toEqual(['repeat:s']);
    expect(await redis.client.xlen('cron-due')).toBe(1);
    // Running low (1 occurrence left): the promotion topped the list up from its rule.
    expect(result.refilled).toEqual(['repeat:s']);
    const [listed] = await listRecurring(redis.client, 'cron-due');
    expect(listed?.cron?.upcoming.length).toBe(CRON_OCCURRENCES);
    expect(listed?.cron?.upcoming[0]).toBe(new Date(now + 60_000).toISOString());
    expect(Number(await redis.client.zscore(delayedKeys('cron-due').schedule, 'repeat:s'))).toBe(now + 60_000);
  });

  it('a parked entry (no occurrence left) adds nothing and is scheduled again once topped up', async () => {
    const rule = { expression: '0 0 1 1 *', timezone: 'UTC' };
    const args = holdHead('repeat:p', { mode: 'at', ms: 0 }, { noMkStream: false, trim: 'none', operator: '~', amount: 0, onlyAcked: false }, { cron: rule, occurrences: [] });
    await holdEntry(redis.client, 'cron-parked', [...args, 'pattern', 'cron-parked', 'data', '1']);
    await redis.client.zadd(delayedKeys('cron-parked').schedule, 'XX', 0, 'repeat:p');
    const result = await promoteDue(redis.client, 'cron-parked');
    expect(result.promoted).toEqual([]);
    expect(result.refilled).toEqual(['repeat:p']);
    expect(await redis.client.exists('cron-parked')).toBe(0);
    const [next] = occurrencesAfter(rule, result.nowMs, 1);
    expect(Number(await redis.client.zscore(delayedKeys('cron-parked').schedule, 'repeat:p'))).toBe(next);
  });

  it('a parked entry topped up with an occurrence within its parking second: the promotion reports that occurrence as the next due time', async () => {
    const rule = { expression: '* * * * * *', timezone: 'UTC' };
    const args = holdHead('repeat:q', { mode: 'at', ms: 0 }, { noMkStream: false, trim: 'none', operator: '~', amount: 0, onlyAcked: false }, { cron: rule, occurrences: [] });
    await holdEntry(redis.client, 'cron-unparked', [...args, 'pattern', 'cron-unparked', 'data', '1']);
    await redis.client.zadd(delayedKeys('cron-unparked').schedule, 'XX', 0, 'repeat:q');
    const result = await promoteDue(redis.client, 'cron-unparked');
    expect(result.refilled).toEqual(['repeat:q']);
    // Parked a second by the script, then due at the rule's next second once topped up: the worker's next round comes then.
    const [next] = occurrencesAfter(rule, result.nowMs, 1);
    expect(Number(await redis.client.zscore(delayedKeys('cron-unparked').schedule, 'repeat:q'))).toBe(next);
    expect(result.nextDueMs).toBe(next);
  });

  it('a top-up that lands after an occurrence it was asked for came due keeps that occurrence (one entry for it next round), not the one after', async () => {
    const rule = { expression: '* * * * * *', timezone: 'UTC' };
    const args = holdHead('repeat:late', { mode: 'at', ms: 0 }, { noMkStream: false, trim: 'none', operator: '~', amount: 0, onlyAcked: false }, { cron: rule, occurrences: [] });
    await holdEntry(redis.client, 'cron-late', [...args, 'pattern', 'cron-late', 'data', '1']);
    await redis.client.zadd(delayedKeys('cron-late').schedule, 'XX', 0, 'repeat:late');
    // The promotion that parked it asked at `askedAt`; its worker's top-up arrives 1.5 s later (a busy or stalled worker).
    const askedAt = (await serverMs()) - 1_500;
    const dueMs = await refillOccurrences(redis.client, 'cron-late', 'repeat:late', rule, askedAt);
    const [missed] = occurrencesAfter(rule, askedAt, 1);
    expect(dueMs).toBe(missed);
    expect(Number(await redis.client.zscore(delayedKeys('cron-late').schedule, 'repeat:late'))).toBe(missed);
    // Due already: the next round adds one entry for the occurrences up to now, as for any missed ones.
    const result = await promoteDue(redis.client, 'cron-late');
    expect(result.added).toBe(1);
    expect(await redis.client.xlen('cron-late')).toBe(1);
  });

  it('50 connections promoting a per-second cron entry for 2.5 s: at most one entry per occurrence', async () => {
    const c = client();
    // Occurrences are counted from before the emit: one that falls between the hold and the race's start is promoted too.
    const beforeHold = await serverMs();
    await lastValueFrom(c.emit('cron-raced', new RedisStreamsRecord({ r: 1 }, { repeat: { cron: '* * * * * *', key: 'r' }, trim: false })));
    const start = await serverMs();
    const end = await raceToPromote(redis.server, 'cron-raced', 50, start, 2_500);
    const entries = await redis.client.xrange('cron-raced', '-', '+');
    const seconds = occurrencesAfter({ expression: '* * * * * *', timezone: 'UTC' }, beforeHold - 1, 10).filter((at) => at <= end).length;
    expect(entries.length).toBeGreaterThanOrEqual(2);
    expect(entries.length).toBeLessThanOrEqual(seconds);
  });

  it('removing it stops it and empties its keys', async () => {
    const c = client();
    await lastValueFrom(c.emit('cron-rm', new RedisStreamsRecord(1, { repeat: { cron: UTC_DAILY.expression, key: 'd' } })));
    expect(await removeDelayed(redis.client, 'cron-rm', ['repeat:d'])).toMatchObject({ removed: 1 });
    expect(await redis.client.exists(...Object.values(delayedKeys('cron-rm')))).toBe(0);
    expect(await listRecurring(redis.client, 'cron-rm')).toEqual([]);
  });

  it('rejects a bad rule, zone or combination, naming the option; nothing is written', async () => {
    const c = client();
    const cases: [unknown, string][] = [
      [{ repeat: { cron: 'not a rule', key: 'k' } }, 'repeat.cron'],
      [{ repeat: { cron: '0 0 31 2 *', key: 'k' } }, 'repeat.cron'],
      [{ repeat: { cron: '0 2 * * *', timezone: 'Mars/Olympus', key: 'k' } }, 'repeat.timezone'],
      [{ repeat: { every: 1_000, timezone: 'UTC', key: 'k' } }, 'repeat.timezone'],
      [{ repeat: { cron: '0 2 * * *', key: 'k' }, delay: 1_000 }, 'delay'],
      [{ repeat: { key: 'k' } }, 'repeat.every'],
    ];
    for (const [options, option] of cases) {
      const error = await lastValueFrom(c.emit('cron-bad', new RedisStreamsRecord(1, options as never))).then(() => undefined, (failure: unknown) => failure);
      expect(error, option).toBeInstanceOf(RedisStreamsOptionError);
      expect((error as RedisStreamsOptionError).option).toBe(option);
    }
    expect(await redis.client.exists('cron-bad', ...Object.values(delayedKeys('cron-bad')))).toBe(0);
  });
});
