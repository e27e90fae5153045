import type { ResolvedHandlerExtras } from './handler-extras.js';

/** The public description of a handled stream (for recovery, health, CLI): its resolved extras. */
export interface HandledStream extends ResolvedHandlerExtras {
  readonly stream: string;
  /** A partition (`extras.partitions` > 1): the stream it is a partition of (`orders` for `orders:p3`); else undefined. */
  readonly partitionOf: string | undefined;
  /** A priority lane (`extras.priorities`): the stream it is a lane of (`orders` for `orders:high`); else undefined. */
  readonly priorityOf: string | undefined;
  /** A priority lane: its name (`high`); else undefined. */
  readonly priority: string | undefined;
  /** The normalized Nest pattern. */
  readonly pattern: string;
  readonly isEventHandler: boolean;
}

/**
 * The stream a pattern's shared state (pause, limits) is kept on: the pattern's own stream, also
 * for its partitions and priority lanes, so one pause or limit covers every partition and lane.
 */
export function patternStreamOf(stream: { readonly stream: string; readonly partitionOf?: string | undefined; readonly priorityOf?: string | undefined }): string {
  return stream.priorityOf ?? stream.partitionOf ?? stream.stream;
}
