import type { MessageHandler } from '@nestjs/microservices';
import { hashSlotOf, streamKeyFor } from '../redis/keys.js';
import type { StreamBinding } from './in-flight.js';
import { RedisStreamsOptionError } from '../errors.js';
import { checkPartitionable, partitionStreamKeys } from '../partitions/partition-keys.js';
import { priorityStreamKey } from '../priorities/priority-lanes.js';
import { limitsTheReader, resolveHandlerExtras, type ResolvedHandlerExtras } from './handler-extras.js';
import type { ResolvedServerOptions } from './options.js';
import type { HandledStream } from './handled-stream.js';

export type { HandledStream } from './handled-stream.js';

export function bindingKey(stream: string, group: string): string {
  return `${stream}\u0000${group}`;
}

/**
 * Every registered handler → its bindings. Validates every handler's extras first, so a bad one
 * throws `RedisStreamsOptionError` before any command is sent.
 *
 * Nest chains event handlers of one pattern through `handler.next`, and calling a link also calls
 * the links after it. Links naming different groups must each consume in their own group, so the
 * chain is re-linked per group: each group's binding calls only its own handlers.
 *
 * A partitioned pattern (`extras.partitions` > 1) gets one binding per partition stream, same
 * pattern, group and handler: each is read, recovered and dead-lettered on its own. So does a
 * pattern with priority lanes (`extras.priorities`), one binding per lane, highest first.
 */
export function bindHandlers(handlers: Map<string, MessageHandler>, options: ResolvedServerOptions): StreamBinding[] {
  const bindings: StreamBinding[] = [];
  for (const [pattern, head] of handlers) {
    const stream = streamKeyFor(pattern, options.streamPrefix);
    const byGroup = new Map<string, { extras: ResolvedHandlerExtras; links: MessageHandler[] }>();
    for (let link: MessageHandler | undefined = head; link; link = link.next) {
      const extras = resolveHandlerExtras(pattern, link.extras, options);
      if (extras.batch !== undefined && link.isEventHandler !== true) {
        throw new RedisStreamsOptionError(
          `extras.batch (handler "${pattern}")`,
          'is for @EventPattern handlers only: a @MessagePattern request waits for its own reply, so requests are not batched',
        );
      }
      const group = byGroup.get(extras.group);
      if (!group) {
        byGroup.set(extras.group, { extras, links: [link] });
        continue;
      }
      if (group.extras.partitions !== extras.partitions) throw partitionsDisagree(pattern, group.extras.partitions, extras.partitions);
      if (!sameFlow(group.extras, extras)) {
        throw new RedisStreamsOptionError(
          'extras',
          `handlers of "${pattern}" in group "${extras.group}" disagree on rateLimit/globalConcurrency; the limits are the group's: give them the same extras or separate groups`,
        );
      }
      if (group.extras.raw !== extras.raw || group.extras.ackMode !== extras.ackMode || !sameBatch(group.extras.batch, extras.batch)) {
        throw new RedisStreamsOptionError(
          'extras',
          `handlers of "${pattern}" in group "${extras.group}" disagree on raw/ackMode/batch; give them the same extras or separate groups`,
        );
      }
      group.links.push(link);
    }
    if (byGroup.size > 1) relinkPerGroup([...byGroup.values()].map((group) => group.links));
    // One pattern is one set of streams: every group reads it with the same partition count.
    const counts = new Set([...byGroup.values()].map(({ extras }) => extras.partitions));
    if (counts.size > 1) throw partitionsDisagree(pattern, ...([...counts] as [number, number]));
    const partitions = [...counts][0] as number;
    checkPartitionable(`extras.partitions (handler "${pattern}")`, stream, partitions);
    // Likewise the lanes: every group reads the same ones.
    const groups = [...byGroup.values()];
    const lanes = (groups[0] as (typeof groups)[number]).extras.priorities;
    if (groups.some(({ extras }) => !sameLanes(extras.priorities, lanes))) throw prioritiesDisagree(pattern);
    const streams = lanes === undefined ? partitionStreamKeys(stream, partitions) : lanes.map((lane) => priorityStreamKey(stream, lane));
    for (const { extras, links } of groups) {
      const handler = links[0] as MessageHandler;
      if (extras.timeout !== undefined && handler.isEventHandler !== true) {
        throw new RedisStreamsOptionError(`extras.timeout (handler "${pattern}")`, "applies to @EventPattern handlers: a request is bounded by its caller's timeout");
      }
      for (const [index, partition] of streams.entries()) {
        bindings.push({
          key: bindingKey(partition, extras.group),
          pattern,
          stream: partition,
          partitionOf: partitions > 1 ? stream : undefined,
          priorityOf: lanes === undefined ? undefined : stream,
          priority: lanes?.[index],
          group: extras.group,
          raw: extras.raw,
          ackMode: extras.ackMode,
          startId: extras.startId,
          concurrency: extras.concurrency,
          maxDeliveries: extras.maxDeliveries,
          minIdleTime: extras.minIdleTime,
          recovery: extras.recovery,
          retry: extras.retry,
          idempotency: extras.idempotency,
          batch: extras.batch,
          partitions,
          rateLimit: extras.rateLimit,
          globalConcurrency: extras.globalConcurrency,
          priorities: lanes,
          timeout: extras.timeout,
          // A request's outcome is its reply: results are kept for event handlers.
          keepResults: handler.isEventHandler === true ? extras.keepResults : undefined,
          limits: undefined,
          handler,
          isEventHandler: handler.isEventHandler === true,
          queue: [],
          running: 0,
        });
      }
    }
  }
  return bindings;
}

function sameLanes(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  return a === b || (a !== undefined && b !== undefined && a.length === b.length && a.every((lane, i) => lane === b[i]));
}

function prioritiesDisagree(pattern: string): RedisStreamsOptionError {
  return new RedisStreamsOptionError(
    `extras.priorities (handler "${pattern}")`,
    `handlers of "${pattern}" disagree on priorities: one pattern is one set of lane streams; give every handler the same lanes, in the same order`,
  );
}

function partitionsDisagree(pattern: string, one: number, other: number): RedisStreamsOptionError {
  return new RedisStreamsOptionError(
    `extras.partitions (handler "${pattern}")`,
    `handlers of "${pattern}" disagree on partitions (${one} vs ${other}): one pattern is one set of streams; give every handler the same count`,
  );
}

/**
 * Runs after Nest's `addHandler`, which keeps one handler per pattern: a message handler replaces
 * whatever was registered before it. Event handlers declared before the message handler of their
 * pattern (an audit group reading the requests too) would then silently never run: they are put
 * back behind it, as if declared after. A second message handler of one pattern would silently
 * replace the first (only one group could answer the stream's requests): refused.
 */
export function keepEarlierEventHandlers(pattern: string, previous: MessageHandler | undefined, added: MessageHandler): void {
  if (added.isEventHandler || previous === undefined || previous === added) return;
  if (!previous.isEventHandler) {
    throw new Error(
      `pattern "${pattern}" has two @MessagePattern handlers: Nest keeps only one, so only one of them could answer its requests; remove one or give it another pattern`,
    );
  }
  let tail = added;
  while (tail.next) tail = tail.next as MessageHandler;
  tail.next = previous;
}

function sameFlow(a: ResolvedHandlerExtras, b: ResolvedHandlerExtras): boolean {
  const rate =
    a.rateLimit === b.rateLimit ||
    (a.rateLimit?.max === b.rateLimit?.max && a.rateLimit?.perMs === b.rateLimit?.perMs && a.rateLimit?.key === b.rateLimit?.key);
  const permits =
    a.globalConcurrency === b.globalConcurrency ||
    (a.globalConcurrency?.max === b.globalConcurrency?.max && a.globalConcurrency?.leaseMs === b.globalConcurrency?.leaseMs);
  return rate && permits;
}

function sameBatch(a: ResolvedHandlerExtras['batch'], b: ResolvedHandlerExtras['batch']): boolean {
  return a === b || (a !== undefined && b !== undefined && a.size === b.size && a.waitMs === b.waitMs);
}

function relinkPerGroup(groups: MessageHandler[][]): void {
  for (const links of groups) {
    links.forEach((link, i) => {
      link.next = links[i + 1];
    });
  }
}

export function describeBinding(binding: StreamBinding): HandledStream {
  const { stream, partitionOf, priorityOf, priority, group, pattern, raw, ackMode, startId, concurrency, maxDeliveries, minIdleTime, recovery, retry, idempotency, batch, partitions, rateLimit, globalConcurrency, priorities, timeout, keepResults, isEventHandler } = binding;
  return { stream, partitionOf, priorityOf, priority, group, pattern, raw, ackMode, startId, concurrency, maxDeliveries, minIdleTime, recovery, retry, idempotency, batch, partitions, rateLimit, globalConcurrency, priorities, timeout, keepResults, isEventHandler };
}

/**
 * Bindings that one blocking connection reads together: per group; on a Cluster per group and hash
 * slot (one XREADGROUP may only name keys of one slot; streams sharing a hash tag share a reader).
 * A binding its limits gate (`globalConcurrency`, a `rateLimit` without key) has a reader of its own: its
 * read's COUNT is what the limit grants, which must not be split with other streams. The lanes of
 * one pattern (`extras.priorities`) share a reader of their own: its reads compare the lanes.
 */
export function groupBindingsForReaders(bindings: readonly StreamBinding[], perSlot: boolean): StreamBinding[][] {
  const byReader = new Map<string, StreamBinding[]>();
  for (const binding of bindings) {
    const key = limitsTheReader(binding)
      ? `limited\n${binding.key}`
      : binding.priorityOf !== undefined
        ? `priorities\n${bindingKey(binding.priorityOf, binding.group)}`
        : perSlot
          ? `${binding.group}\n${hashSlotOf(binding.stream)}`
          : binding.group;
    const list = byReader.get(key);
    if (list) list.push(binding);
    else byReader.set(key, [binding]);
  }
  return [...byReader.values()];
}
