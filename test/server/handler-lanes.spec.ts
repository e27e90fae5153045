import { describe, expect, it } from 'vitest';
import { HandlerLanes } from '../../src/server/handler-lanes.js';
import { PrefetchSlots } from '../../src/server/prefetch-slots.js';
import type { InFlightEntry, StreamBinding } from '../../src/server/in-flight.js';
import type { ReplyEntry } from '../../src/server/read-reply.js';

// HandlerLanes.startableNow: what a rate-limited read may take (stream-reader.ts wantedNow).

function binding(stream: string, concurrency: number): StreamBinding {
  return { stream, group: 'g', key: `${stream}\0g`, queue: [], running: 0, concurrency } as unknown as StreamBinding;
}

const reply = (...ids: string[]): ReplyEntry[] => ids.map((id) => [id, ['data', '{}']] as const);

describe('HandlerLanes.startableNow', () => {
  it('counts the entries waiting for a handler, not those started and still at the front of their queue', () => {
    // Lane a may run 2 at once, lane b all 10 of the server's.
    const a = binding('a', 2);
    const b = binding('b', 10);
    const started: InFlightEntry[] = [];
    const lanes = new HandlerLanes(10, [a, b]);
    lanes.handledBy({ start: (entry) => started.push(entry), startBatch: () => undefined });
    const slots = new PrefetchSlots(100);
    lanes.queued(a, slots.admitFresh(a, reply('1-0', '2-0', '3-0', '4-0', '5-0')));
    expect(started.map((entry) => entry.id)).toEqual(['1-0', '2-0']);
    // 2 running, 3 waiting: 5 of the server's 10 handlers are free for b.
    expect(lanes.startableNow(b)).toBe(5);
    lanes.finished(started[0] as InFlightEntry);
    expect(started.map((entry) => entry.id)).toEqual(['1-0', '2-0', '3-0']);
    expect(lanes.startableNow(b)).toBe(6);
    expect(lanes.startableNow(a)).toBe(0);
  });
});
