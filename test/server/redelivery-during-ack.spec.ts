import { describe, expect, it } from 'vitest';
import { PrefetchSlots } from '../../src/server/prefetch-slots.js';
import { slotsWithLanes } from '../helpers/slots-with-lanes.js';
import type { IncomingEntry, InFlightEntry, StreamBinding } from '../../src/server/in-flight.js';
import { pendingDeliveriesOf } from '../../src/server/redelivery-check.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

// A group recreated at 0 (deleted, or lost in a failover) delivers again an entry whose ack is in
// flight. If that ack reaches Redis before the new delivery, it does not cover it: the new delivery
// must not be dropped as "already in flight", or it sits pending until recovery's minIdleTime.

function binding(): StreamBinding {
  return { stream: 's', group: 'g', key: 's\0g', queue: [], running: 0, concurrency: 10 } as unknown as StreamBinding;
}

function setUp() {
  const lane = binding();
  const started: InFlightEntry[] = [];
  const redelivered: IncomingEntry[] = [];
  const slots = new PrefetchSlots(10, undefined, (_binding, incoming) => redelivered.push(incoming));
  const dispatcher = slotsWithLanes(slots, [lane], started);
  return { lane, started, redelivered, dispatcher };
}

const delivery = (deliveryCount: number): IncomingEntry => ({ id: '1-0', flat: ['data', '{}'], deliveryCount });

describe('Dispatcher: the same id read again while its entry is held', () => {
  it('while its ack is under way: kept aside and handed on once the ack is done', () => {
    const { lane, started, redelivered, dispatcher } = setUp();
    dispatcher.admit(lane, [delivery(1)]);
    const entry = started[0] as InFlightEntry;
    dispatcher.finished(entry);
    dispatcher.markReturning(entry);
    dispatcher.admit(lane, [delivery(1)]);
    expect(started).toHaveLength(1);
    expect(redelivered).toEqual([]);
    dispatcher.release(entry);
    expect(redelivered).toEqual([delivery(1)]);
    expect(dispatcher.inFlightCount()).toBe(0);
  });

  it('while its handler runs (a re-read of the own pending list): skipped, nothing handed on', () => {
    const { lane, started, redelivered, dispatcher } = setUp();
    dispatcher.admit(lane, [delivery(1)]);
    dispatcher.admit(lane, [delivery(2)]);
    const entry = started[0] as InFlightEntry;
    expect(started).toHaveLength(1);
    dispatcher.finished(entry);
    dispatcher.markReturning(entry);
    dispatcher.release(entry);
    expect(redelivered).toEqual([]);
  });

  it('a fresh read (entries as the reply holds them) while its ack is under way: kept aside, handed on by the release of its XACK batch, once', () => {
    const { lane, started, redelivered, dispatcher } = setUp();
    dispatcher.admitFresh(lane, [['1-0', ['data', '{}']], ['2-0', ['data', '{}']]]);
    const [first, second] = started as [InFlightEntry, InFlightEntry];
    for (const entry of started) {
      dispatcher.finished(entry);
      dispatcher.markReturning(entry);
    }
    dispatcher.admitFresh(lane, [['1-0', ['data', '{}']]]);
    expect(started).toHaveLength(2);
    expect(dispatcher.slotsReturning()).toBe(true);
    dispatcher.releaseAll([first, second]);
    expect(redelivered).toEqual([delivery(1)]);
    expect(dispatcher.inFlightCount()).toBe(0);
    expect(dispatcher.slotsReturning()).toBe(false);
    expect(dispatcher.bytesHeld().held).toBe(0);
    // A second release of the same entries (e.g. a nack after the ack) frees nothing twice.
    dispatcher.releaseAll([first, second]);
    dispatcher.release(first);
    expect(dispatcher.inFlightCount()).toBe(0);
    expect(dispatcher.freeSlots()).toBe(10);
    expect(redelivered).toHaveLength(1);
  });
});

describe('pendingDeliveriesOf: is the kept-aside delivery still this consumer’s?', () => {
  const redis = useRedisServer();

  it('pending for this consumer: its delivery count; acked or another consumer’s: undefined', async () => {
    const client = redis.client;
    await client.xgroup('CREATE', 's', 'g', '0', 'MKSTREAM');
    const first = (await client.xadd('s', '*', 'data', '1')) as string;
    const second = (await client.xadd('s', '*', 'data', '2')) as string;
    await client.xreadgroup('GROUP', 'g', 'c', 'COUNT', 1, 'STREAMS', 's', '>');
    await client.xreadgroup('GROUP', 'g', 'other', 'COUNT', 1, 'STREAMS', 's', '>');
    expect(await pendingDeliveriesOf(client, 's', 'g', first, 'c')).toBe(1);
    expect(await pendingDeliveriesOf(client, 's', 'g', second, 'c')).toBeUndefined();
    await client.xclaim('s', 'g', 'c', 0, first);
    expect(await pendingDeliveriesOf(client, 's', 'g', first, 'c')).toBe(2);
    await client.xack('s', 'g', first);
    expect(await pendingDeliveriesOf(client, 's', 'g', first, 'c')).toBeUndefined();
  });
});
