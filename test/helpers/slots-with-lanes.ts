import { HandlerLanes, type EntryRunner } from '../../src/server/handler-lanes.js';
import type { IncomingEntry, InFlightEntry, StreamBinding } from '../../src/server/in-flight.js';
import type { PrefetchSlots } from '../../src/server/prefetch-slots.js';
import type { ReplyEntry } from '../../src/server/read-reply.js';

/**
 * Prefetch slots and handler lanes as the server joins them (an admission is queued on its lane,
 * a started entry is recorded in `started` and runs until `finished`), for unit tests of the slots.
 */
export function slotsWithLanes(slots: PrefetchSlots, bindings: StreamBinding[], started: InFlightEntry[]) {
  const lanes = new HandlerLanes(100, bindings);
  const runner: EntryRunner = { start: (entry) => started.push(entry), startBatch: () => undefined };
  lanes.handledBy(runner);
  return {
    admit: (binding: StreamBinding, entries: readonly IncomingEntry[]) => lanes.queued(binding, slots.admit(binding, entries)),
    admitFresh: (binding: StreamBinding, entries: readonly ReplyEntry[]) => lanes.queued(binding, slots.admitFresh(binding, entries)),
    finished: (entry: InFlightEntry) => lanes.finished(entry),
    markReturning: (entry: InFlightEntry) => slots.markReturning(entry),
    release: (entry: InFlightEntry) => slots.release(entry),
    releaseAll: (entries: readonly InFlightEntry[]) => slots.releaseAll(entries),
    has: (binding: StreamBinding, id: string) => slots.has(binding, id),
    inFlightCount: () => slots.inFlightCount(),
    unsettledIdsOf: (binding: StreamBinding) => slots.unsettledIdsOf(binding),
    slotsReturning: () => slots.slotsReturning(),
    bytesHeld: () => slots.bytesHeld(),
    freeSlots: () => slots.freeSlots(),
  };
}
