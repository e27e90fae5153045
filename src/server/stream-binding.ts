import type { MessageHandler } from '@nestjs/microservices';
import type { ResolvedHandlerExtras } from './handler-extras.js';

/** The public description of a handled stream (for recovery, health, CLI): its resolved extras. */
export interface HandledStream extends ResolvedHandlerExtras {
  readonly stream: string;
  /** A partition (`extras.partitions` > 1): the stream it is a partition of (`orders` for `orders:p3`); else undefined. */
  readonly partitionOf: string | undefined;
  /** The normalized Nest pattern. */
  readonly pattern: string;
  readonly isEventHandler: boolean;
}

/**
 * One handler bound to one stream and consumer group, with its options resolved once (never per
 * entry). It also carries the lane the dispatcher keeps for it: entries waiting for a free
 * handler slot, and how many of its handlers run. Generic over the queued entry so that this
 * file and the entry's (in-flight.ts, which names `StreamBinding`) need not import each other.
 */
export interface StreamBindingOf<Entry> extends HandledStream {
  /** `stream` + NUL + `group`: the key of this binding and the prefix of its in-flight keys. */
  readonly key: string;
  readonly handler: MessageHandler;
  /** Dispatcher lane: fetched entries not started yet, in arrival order. */
  readonly queue: Entry[];
  /** Dispatcher lane: handlers of this binding running now. */
  running: number;
}
