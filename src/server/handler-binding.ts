import type { MessageHandler } from '@nestjs/microservices';
import { streamKeyFor } from '../redis/keys.js';
import type { InFlightEntry } from './in-flight.js';
import { resolveHandlerExtras, type AckMode, type ResolvedServerOptions } from './options.js';

/**
 * One handler bound to one stream and consumer group, with its options resolved once (never per
 * entry). It also carries the lane the dispatcher keeps for it: entries waiting for a free
 * handler slot, and how many of its handlers run.
 */
export interface StreamBinding {
  /** `stream` + NUL + `group`: the key of this binding and the prefix of its in-flight keys. */
  readonly key: string;
  /** The normalized Nest pattern. */
  readonly pattern: string;
  readonly stream: string;
  readonly group: string;
  readonly raw: boolean;
  readonly ackMode: AckMode;
  readonly startId: string;
  readonly concurrency: number;
  readonly maxDeliveries: number | undefined;
  readonly minIdleTime: number | undefined;
  readonly recovery: boolean | undefined;
  readonly handler: MessageHandler;
  readonly isEventHandler: boolean;
  /** Dispatcher lane: fetched entries not started yet, in arrival order. */
  readonly queue: InFlightEntry[];
  /** Dispatcher lane: handlers of this binding running now. */
  running: number;
}

/** The public description of a handled stream (for recovery, health, CLI). */
export interface HandledStream {
  readonly stream: string;
  readonly group: string;
  readonly pattern: string;
  readonly raw: boolean;
  readonly ackMode: AckMode;
  readonly startId: string;
  readonly concurrency: number;
  readonly maxDeliveries: number | undefined;
  /** `extras.minIdleTime` in ms (recovery's threshold for this stream). */
  readonly minIdleTime: number | undefined;
  /** `extras.recovery`: false when recovery must leave this stream + group alone. */
  readonly recovery: boolean | undefined;
  readonly isEventHandler: boolean;
}

export function bindingKey(stream: string, group: string): string {
  return `${stream}\u0000${group}`;
}

/**
 * Every registered handler → its binding. Validates every handler's extras first, so a bad one
 * throws `RedisStreamsOptionError` before any command is sent.
 */
export function bindHandlers(handlers: Map<string, MessageHandler>, options: ResolvedServerOptions): StreamBinding[] {
  const bindings: StreamBinding[] = [];
  for (const [pattern, handler] of handlers) {
    const extras = resolveHandlerExtras(pattern, handler.extras, options);
    const stream = streamKeyFor(pattern, options.prefix);
    bindings.push({
      key: bindingKey(stream, extras.group),
      pattern,
      stream,
      group: extras.group,
      raw: extras.raw,
      ackMode: extras.ackMode,
      startId: extras.startId,
      concurrency: extras.concurrency,
      maxDeliveries: extras.maxDeliveries,
      minIdleTime: extras.minIdleTime,
      recovery: extras.recovery,
      handler,
      isEventHandler: handler.isEventHandler === true,
      queue: [],
      running: 0,
    });
  }
  return bindings;
}

export function describeBinding(binding: StreamBinding): HandledStream {
  const { stream, group, pattern, raw, ackMode, startId, concurrency, maxDeliveries, minIdleTime, recovery, isEventHandler } = binding;
  return { stream, group, pattern, raw, ackMode, startId, concurrency, maxDeliveries, minIdleTime, recovery, isEventHandler };
}

/** Bindings that one blocking connection reads together: per group (per group + stream on a Cluster). */
export function groupBindingsForReaders(bindings: readonly StreamBinding[], perStream: boolean): StreamBinding[][] {
  const byReader = new Map<string, StreamBinding[]>();
  for (const binding of bindings) {
    const key = perStream ? binding.key : binding.group;
    const list = byReader.get(key);
    if (list) list.push(binding);
    else byReader.set(key, [binding]);
  }
  return [...byReader.values()];
}
