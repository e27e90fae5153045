import { describe, expect, it } from 'vitest';
import { PrefetchSlots } from '../../src/server/prefetch-slots.js';
import { slotsWithLanes } from '../helpers/slots-with-lanes.js';
import type { InFlightEntry, StreamBinding } from '../../src/server/in-flight.js';
import type { ReplyEntry } from '../../src/server/read-reply.js';

// The dispatcher's index of held entries (src/server/in-flight-index.ts), through the dispatcher:
// the twin check of fresh reads (skipped above the highest id admitted, done at or below it), and
// has() (recovery's "is it held here?") as entries come and go.

function binding(stream: string): StreamBinding {
  return { stream, group: 'g', key: `${stream}\0g`, queue: [], running: 0, concurrency: 100 } as unknown as StreamBinding;
}

const reply = (...ids: string[]): ReplyEntry[] => ids.map((id) => [id, ['data', '{}']] as const);

function setUp() {
  const a = binding('a');
  const b = binding('b');
  const started: InFlightEntry[] = [];
  const dispatcher = slotsWithLanes(new PrefetchSlots(100), [a, b], started);
  return { a, b, started, dispatcher };
}

describe('Dispatcher: the index of held entries', () => {
  it('fresh reads above every id admitted are all new; at or below it (a group reset), held ids are skipped', () => {
    const { a, started, dispatcher } = setUp();
    dispatcher.admitFresh(a, reply('5-0', '5-1', '10-0'));
    dispatcher.admitFresh(a, reply('10-1', '11-0'));
    expect(started.map((entry) => entry.id)).toEqual(['5-0', '5-1', '10-0', '10-1', '11-0']);
    // The group was recreated at 0: the same ids come again, with one never seen.
    dispatcher.admitFresh(a, reply('1-0', '5-1', '11-0', '12-0'));
    expect(started.map((entry) => entry.id)).toEqual(['5-0', '5-1', '10-0', '10-1', '11-0', '1-0', '12-0']);
    expect(dispatcher.inFlightCount()).toBe(7);
  });

  it('an id released is admitted again by a later read, and ids of another stream are another binding\'s', () => {
    const { a, b, started, dispatcher } = setUp();
    dispatcher.admitFresh(a, reply('1-0', '2-0'));
    dispatcher.admitFresh(b, reply('1-0'));
    expect(started).toHaveLength(3);
    const first = started[0] as InFlightEntry;
    dispatcher.finished(first);
    dispatcher.release(first);
    dispatcher.admitFresh(a, reply('1-0', '2-0'));
    expect(started.map((entry) => `${entry.binding.stream}:${entry.id}`)).toEqual(['a:1-0', 'a:2-0', 'b:1-0', 'a:1-0']);
  });

  it('has() follows admissions and releases, whatever was asked before', () => {
    const { a, b, started, dispatcher } = setUp();
    expect(dispatcher.has(a, '1-0')).toBe(false);
    dispatcher.admitFresh(a, reply('1-0'));
    expect(dispatcher.has(a, '1-0')).toBe(true);
    expect(dispatcher.has(b, '1-0')).toBe(false);
    dispatcher.admit(b, [{ id: '1-0', flat: ['data', '{}'], deliveryCount: 3 }]);
    expect(dispatcher.has(b, '1-0')).toBe(true);
    expect(dispatcher.has(a, '1-0')).toBe(true);
    const entry = started[0] as InFlightEntry;
    dispatcher.finished(entry);
    dispatcher.release(entry);
    expect(dispatcher.has(a, '1-0')).toBe(false);
    expect(dispatcher.unsettledIdsOf(b)).toEqual(['1-0']);
    expect(dispatcher.unsettledIdsOf(a)).toEqual([]);
  });
});
