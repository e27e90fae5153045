import { RedisStreamsClaimError } from '../claim/claim.errors.js';
import type { StreamInspector } from '../claim/stream-inspector.js';
import { countHeldAndDue } from '../delayed/delayed-inspection.js';
import { pausedGroupsOf } from '../flow/pause-state.js';
import type { RedisClient } from '../redis/connection.js';
import type { ConsumerView, DelayedView, GroupView, StreamView } from './dashboard-views.js';
import type { StreamTarget } from './stream-targets.js';
import { errorMessage } from '../error-message.js';
import { isRedisUnavailable } from '../redis/redis-unavailable.js';
import { parseConsumers, parseGroups, parseStreamInfo } from '../claim/inspection-replies.js';
import type { GroupInfo, StreamInfo } from '../claim/inspection.types.js';
import { batchThisTick } from '../redis/tick-batching.js';

/** What sampling needs: the inspector and connection, each stream key's dead-letter key, Redis' clock. */
export interface SamplerParts {
  readonly inspector: StreamInspector;
  readonly redis: RedisClient;
  readonly deadLetterKeyOf: (key: string) => string;
  /** Redis' TIME in ms, read once a refresh (due times are on Redis' clock); null when it could not be read. */
  readonly redisNowMs: number | null;
}

/**
 * One refresh of a page of streams, batched: every stream key's XINFO STREAM, XINFO GROUPS, XLEN
 * of its dead letters, ZCARD and ZCOUNT of its delayed schedule and every stream's HGETALL of its
 * pause state go out in one socket write; then every group's XINFO CONSUMERS in a second one. So a
 * page costs two round trips whatever its number of streams (and one TIME before, see the caller).
 * A key whose XINFO fails (no such stream yet, a partitioned stream's name, a key of another type)
 * is read again alone by `sampleTarget`, which tells those apart.
 */
export async function sampleTargets(parts: SamplerParts, targets: readonly StreamTarget[]): Promise<StreamView[]> {
  const { redis } = parts;
  batchThisTick(redis);
  const reads = targets.map((target) => ({
    target,
    partitioned: target.partitions !== undefined && target.partitions.length > 0,
    paused: pausedGroupsOf(redis, target.name).catch(() => new Map<string, number>()),
    keys: (target.partitions !== undefined && target.partitions.length > 0 ? target.partitions : [target.name]).map((key) => ({
      key,
      stream: redis.call('XINFO', 'STREAM', key).then((reply) => parseStreamInfo(key, reply)),
      groups: redis.call('XINFO', 'GROUPS', key).then(parseGroups),
      deadLetters: redis.xlen(parts.deadLetterKeyOf(key)).catch(() => 0),
      delayed: delayedOf(redis, key, parts.redisNowMs),
    })),
  }));
  const firsts = await Promise.all(reads.map(async ({ keys }) => Promise.all(keys.map(async (one) => {
    const [stream, groups] = await Promise.all([one.stream, one.groups]).catch(() => [null, null] as const);
    return { ...one, stream, groups };
  }))));
  batchThisTick(redis);
  const views = reads.map(async ({ target, partitioned, paused }, index): Promise<StreamView> => {
    const keys = firsts[index]!;
    if (keys.some((one) => one.stream === null || one.groups === null)) return sampleTarget(parts, target);
    const keyViews = await Promise.all(keys.map(async (one) => keyView(
      { ...emptyView(one.key, partitioned ? 'partition' : target.source), exists: true, deadLetters: await one.deadLetters, delayed: await one.delayed },
      one.stream!,
      await groupViews(redis, one.key, one.groups!, target.handledGroups),
    )));
    const view = !partitioned ? keyViews[0]! : { ...totalOf(target.name, target.source, keyViews), partitions: keyViews };
    return markPaused(view, await paused);
  });
  return Promise.all(views);
}

/**
 * One refresh of one stream. Per stream key: XINFO STREAM, XINFO GROUPS, XLEN of its dead-letter
 * stream, ZCARD and ZCOUNT of its delayed schedule, then XINFO CONSUMERS per group; all sent at once on the one connection;
 * and HGETALL of the stream's pause state, once for a partitioned stream. A partitioned
 * stream costs that per partition (its partition keys come from the servers' bindings, or from
 * one GET of its metadata key when its name holds no stream). No SCAN, no KEYS.
 */
export async function sampleTarget(parts: SamplerParts, target: StreamTarget): Promise<StreamView> {
  // One HGETALL a stream, of its own name: a partitioned stream's pause covers every partition.
  // Nothing paused when Redis refuses the key (an ACL from before pauses): the rest shows.
  const paused = pausedGroupsOf(parts.redis, target.name).catch(() => new Map<string, number>());
  const view = await sampleUnmarked(parts, target);
  return markPaused(view, await paused);
}

async function sampleUnmarked(parts: SamplerParts, target: StreamTarget): Promise<StreamView> {
  if (target.partitions !== undefined && target.partitions.length > 0) return partitioned(parts, target, target.partitions);
  const sample = await sampleKey(parts, target.name, target.handledGroups, target.source);
  if (sample.partitionKeys === undefined) return sample.view;
  return partitioned(parts, target, sample.partitionKeys);
}

/** The stream's groups (and its partitions') with their pause state. */
function markPaused(view: StreamView, paused: ReadonlyMap<string, number>): StreamView {
  if (paused.size === 0) return view;
  const mark = (one: StreamView): StreamView => ({
    ...one,
    groups: one.groups.map((group) => {
      const since = paused.get(group.name);
      return since === undefined ? group : { ...group, paused: true, pausedAt: new Date(since).toISOString() };
    }),
  });
  const marked = mark(view);
  return view.partitions === undefined ? marked : { ...marked, partitions: view.partitions.map(mark) };
}

async function partitioned(parts: SamplerParts, target: StreamTarget, keys: readonly string[]): Promise<StreamView> {
  const partitions = await Promise.all(keys.map(async (key) => (await sampleKey(parts, key, target.handledGroups, 'partition')).view));
  return { ...totalOf(target.name, target.source, partitions), partitions };
}

async function sampleKey(
  { inspector, redis, deadLetterKeyOf, redisNowMs }: SamplerParts,
  key: string,
  handled: ReadonlySet<string>,
  source: StreamView['source'],
): Promise<{ view: StreamView; partitionKeys?: readonly string[] }> {
  const deadLetters = redis.xlen(deadLetterKeyOf(key)).catch(() => 0);
  // Held entries may exist before their stream does (the promotion creates it): counted either way.
  const delayed = delayedOf(redis, key, redisNowMs);
  const empty = emptyView(key, source);
  let stream;
  let groups;
  try {
    [stream, groups] = await Promise.all([inspector.stream(key), inspector.groups(key)]);
  } catch (error) {
    // Redis unreachable is no stream's error: the whole read fails, answered 503 naming why.
    if (isRedisUnavailable(error)) throw error;
    const view = { ...empty, deadLetters: await deadLetters, delayed: await delayed };
    if (error instanceof RedisStreamsClaimError && error.reason === 'missing-stream') return { view, partitionKeys: error.partitionKeys };
    return { view: { ...view, error: errorMessage(error) } };
  }
  return { view: keyView({ ...empty, exists: true, deadLetters: await deadLetters, delayed: await delayed }, stream, await groupViews(redis, key, groups, handled)) };
}

function emptyView(key: string, source: StreamView['source']): StreamView {
  return { name: key, source, exists: false, length: 0, entriesAdded: null, firstEntryId: null, lastEntryId: null, deadLetters: 0, groups: [], delayed: null };
}

function keyView(base: StreamView, stream: StreamInfo, groups: GroupView[]): StreamView {
  return { ...base, length: stream.length, entriesAdded: stream.entriesAdded, firstEntryId: stream.firstEntryId, lastEntryId: stream.lastEntryId, groups };
}

/** The groups with their consumers: one XINFO CONSUMERS each, all sent at once. */
function groupViews(redis: RedisClient, key: string, groups: readonly GroupInfo[], handled: ReadonlySet<string>): Promise<GroupView[]> {
  return Promise.all(
    groups.map(async (group): Promise<GroupView> => ({
      name: group.name,
      handled: handled.has(group.name),
      pending: group.pending,
      lag: group.lag,
      entriesRead: group.entriesRead,
      lastDeliveredId: group.lastDeliveredId,
      consumers: (await redis.call('XINFO', 'CONSUMERS', key, group.name).then(parseConsumers).catch(() => [])).map(({ name, pending, idleMs, inactiveMs }) => ({ name, pending, idleMs, inactiveMs })),
      paused: false,
      pausedAt: null,
    })),
  );
}

/**
 * Null, not an error, when Redis refuses the delayed keys (NOPERM: a worker's ACL from before
 * delayed entries, as the CLI's `info` does) or cannot count them: the rest of the stream shows.
 */
async function delayedOf(redis: RedisClient, key: string, nowMs: number | null): Promise<DelayedView | null> {
  if (nowMs === null) return null;
  return countHeldAndDue(redis, key, nowMs).catch(() => null);
}

/**
 * The whole partitioned stream: lengths, entries added, dead letters, delayed counts, pending, lag and entries
 * read summed (null when a partition does not count them); per consumer, pending summed and the
 * least idle time of any partition (a consumer reads all its partitions).
 */
function totalOf(name: string, source: StreamView['source'], partitions: readonly StreamView[]): StreamView {
  const existing = partitions.filter((partition) => partition.exists);
  const groupNames = [...new Set(existing.flatMap((partition) => partition.groups.map((group) => group.name)))];
  return {
    name,
    source,
    exists: existing.length > 0,
    length: sum(existing.map((partition) => partition.length)) ?? 0,
    entriesAdded: sum(existing.map((partition) => partition.entriesAdded)),
    firstEntryId: null,
    lastEntryId: null,
    deadLetters: sum(partitions.map((partition) => partition.deadLetters)) ?? 0,
    delayed: delayedTotal(partitions.map((partition) => partition.delayed)),
    groups: groupNames.map((group) => groupTotal(group, existing.flatMap((partition) => partition.groups.filter((one) => one.name === group)))),
  };
}

function groupTotal(name: string, groups: readonly GroupView[]): GroupView {
  const consumers = new Map<string, ConsumerView>();
  for (const consumer of groups.flatMap((group) => group.consumers)) {
    const seen = consumers.get(consumer.name);
    if (seen === undefined) consumers.set(consumer.name, { ...consumer });
    else {
      seen.pending += consumer.pending;
      seen.idleMs = Math.min(seen.idleMs, consumer.idleMs);
      seen.inactiveMs = seen.inactiveMs === null || consumer.inactiveMs === null ? null : Math.min(seen.inactiveMs, consumer.inactiveMs);
    }
  }
  return {
    name,
    handled: groups.some((group) => group.handled),
    pending: sum(groups.map((group) => group.pending)) ?? 0,
    lag: sum(groups.map((group) => group.lag)),
    entriesRead: sum(groups.map((group) => group.entriesRead)),
    lastDeliveredId: null,
    consumers: [...consumers.values()],
    paused: false,
    pausedAt: null,
  };
}

function delayedTotal(parts: readonly (DelayedView | null)[]): DelayedView | null {
  const held = sum(parts.map((part) => part?.held ?? null));
  const due = sum(parts.map((part) => part?.due ?? null));
  return held === null || due === null ? null : { held, due };
}

/** The sum, or null when any part is unknown. */
function sum(values: readonly (number | null)[]): number | null {
  let total = 0;
  for (const value of values) {
    if (value === null) return null;
    total += value;
  }
  return total;
}
