import type { Attributes } from '@opentelemetry/api';

/**
 * `messaging.system`: the semantic conventions have no value for Redis Streams (their list is
 * kafka, rabbitmq, …; custom values are allowed). Not `redis`: that names the database client
 * spans of Redis instrumentations (`db.system.name`), and dashboards must tell them apart.
 */
export const MESSAGING_SYSTEM = 'redis_streams';

/**
 * What stands for a requester's reply stream (`<replyPrefix>{<uuid>}:replies`, one per client
 * instance) in span names and metrics: a name per client would add a time series per client and
 * per restart. A constant, not a pattern read out of `replyTo`: that field comes from whoever
 * wrote the request, so only a constant is sure to stay one value.
 */
export const TEMPORARY_DESTINATION = '(temporary)';

/** Attributes of our own, under the system's namespace as the conventions ask. */
export const Attr = {
  deliveryCount: 'messaging.redis_streams.message.delivery_count',
  outcome: 'messaging.redis_streams.outcome',
  reason: 'messaging.redis_streams.reason',
  deadLetterStream: 'messaging.redis_streams.dead_letter.stream',
  deadLetterId: 'messaging.redis_streams.dead_letter.id',
  /** A batch's span: how many of its entries failed (marked with `ctx.fail()`, or all when the handler threw). */
  batchFailed: 'messaging.redis_streams.batch.failed_count',
} as const;

/**
 * Past this many destinations (a producer writing to ever new stream names), attributes are built
 * per call instead of cached: the cache must not grow for as long as the process runs.
 */
const MAX_CACHED = 1024;

/** What every producer span and sent count of one destination share. */
export interface SendAttributes {
  readonly spanName: string;
  /** The span's attributes before the per-message ones (conversation id, a reply stream's key). */
  readonly span: Attributes;
  /** The `messaging.client.sent.messages` attributes (no ids). */
  readonly metric: Attributes;
}

/** What every consumed, processed and acked entry of one stream + group shares. */
export interface GroupAttributes {
  readonly processSpanName: string;
  /** The process span's attributes before the ids; also the process duration's. */
  readonly process: Attributes;
  /** `messaging.client.consumed.messages`. */
  readonly receive: Attributes;
  /** Acked, recovered; with a reason: dead-lettered, lost. */
  readonly group: Attributes;
  readonly succeeded: Attributes;
  readonly failed: Attributes;
  /** The dead-letter span's: a settle operation named `dead_letter`. */
  readonly deadLetter: Attributes;
}

/**
 * The attribute objects of metrics and the span names, built once per destination rather than per
 * entry (the SDK copies what it is given; it never changes ours). Metrics carry only
 * low-cardinality attributes; ids go on spans only.
 */
export class DestinationAttributes {
  /** Every reply, whatever requester's reply stream it goes to. */
  readonly reply: SendAttributes = temporarySend();
  private readonly sends = new Map<string, SendAttributes>();
  private readonly groups = new Map<string, Map<string, GroupAttributes>>();

  send(stream: string): SendAttributes {
    return cached(this.sends, stream, stream, buildSend);
  }

  group(stream: string, group: string): GroupAttributes {
    let byGroup = this.groups.get(stream);
    if (byGroup === undefined) {
      byGroup = new Map();
      if (this.groups.size < MAX_CACHED) this.groups.set(stream, byGroup);
    }
    return cached(byGroup, group, stream, buildGroup);
  }
}

/** Copies of cached attribute objects with one more attribute (`error.type`, a reason), one per value. */
export class Variants {
  private readonly byBase = new WeakMap<Attributes, Map<string, Attributes>>();

  constructor(private readonly key: string) {}

  of(base: Attributes, value: string): Attributes {
    let byValue = this.byBase.get(base);
    if (byValue === undefined) {
      byValue = new Map();
      this.byBase.set(base, byValue);
    }
    let attributes = byValue.get(value);
    if (attributes === undefined) {
      attributes = { ...base, [this.key]: value };
      if (byValue.size < MAX_CACHED) byValue.set(value, attributes);
    }
    return attributes;
  }
}

function cached<T>(map: Map<string, T>, key: string, stream: string, build: (stream: string, key: string) => T): T {
  let value = map.get(key);
  if (value === undefined) {
    value = build(stream, key);
    if (map.size < MAX_CACHED) map.set(key, value);
  }
  return value;
}

/** Both names: `messaging.system.name` replaces `messaging.system` in the newest conventions; backends still read the old one. */
function systemAttributes(): Attributes {
  return { 'messaging.system': MESSAGING_SYSTEM, 'messaging.system.name': MESSAGING_SYSTEM };
}

function buildSend(stream: string): SendAttributes {
  const metric: Attributes = { ...systemAttributes(), 'messaging.operation.type': 'send', 'messaging.operation.name': 'send', 'messaging.destination.name': stream };
  return { spanName: `send ${stream}`, span: metric, metric };
}

/**
 * A reply stream, per the conventions for temporary destinations: `messaging.destination.temporary`
 * and a template in place of the name; the span adds the real key as `messaging.destination.name`.
 */
function temporarySend(): SendAttributes {
  const metric: Attributes = {
    ...systemAttributes(),
    'messaging.operation.type': 'send',
    'messaging.operation.name': 'send',
    'messaging.destination.template': TEMPORARY_DESTINATION,
    'messaging.destination.temporary': true,
  };
  return { spanName: `send ${TEMPORARY_DESTINATION}`, span: metric, metric };
}

function buildGroup(stream: string, group: string): GroupAttributes {
  const base: Attributes = { ...systemAttributes(), 'messaging.destination.name': stream, 'messaging.consumer.group.name': group };
  const process: Attributes = { ...base, 'messaging.operation.type': 'process', 'messaging.operation.name': 'process' };
  return {
    processSpanName: `process ${stream}`,
    process,
    receive: { ...base, 'messaging.operation.name': 'receive', 'messaging.operation.type': 'receive' },
    group: base,
    succeeded: { ...process, [Attr.outcome]: 'success' },
    failed: { ...process, [Attr.outcome]: 'failure' },
    deadLetter: { ...base, 'messaging.operation.type': 'settle', 'messaging.operation.name': 'dead_letter' },
  };
}
