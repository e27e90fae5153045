import type { GroupView, StreamView } from './dashboard-views.js';

/**
 * What one stream may weigh in an overview page, whatever Redis holds: at most this many
 * partitions, groups per stream (or partition) and consumers per group are sent; the rest are
 * counted (`partitionsOmitted`, `groupsOmitted`, `consumersOmitted`). Totals (length, pending,
 * lag, dead letters, a partitioned stream's sums) always cover everything.
 */
export const OVERVIEW_PARTITIONS = 16;
export const OVERVIEW_GROUPS = 20;
export const OVERVIEW_CONSUMERS = 20;

/** The stream as an overview page sends it: its lists cut to the bounds above. */
export function boundedView(view: StreamView): StreamView {
  const bounded: StreamView = { ...view, groups: view.groups.slice(0, OVERVIEW_GROUPS).map(boundedGroup) };
  if (view.groups.length > OVERVIEW_GROUPS) bounded.groupsOmitted = view.groups.length - OVERVIEW_GROUPS;
  if (view.partitions !== undefined) {
    bounded.partitions = view.partitions.slice(0, OVERVIEW_PARTITIONS).map(boundedView);
    if (view.partitions.length > OVERVIEW_PARTITIONS) bounded.partitionsOmitted = view.partitions.length - OVERVIEW_PARTITIONS;
  }
  return bounded;
}

function boundedGroup(group: GroupView): GroupView {
  if (group.consumers.length <= OVERVIEW_CONSUMERS) return group;
  return { ...group, consumers: group.consumers.slice(0, OVERVIEW_CONSUMERS), consumersOmitted: group.consumers.length - OVERVIEW_CONSUMERS };
}
