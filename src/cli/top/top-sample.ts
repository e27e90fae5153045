/** What `top` reads: one sample of the chosen streams and their groups. */

/** What `top` reads of one group at one moment. */
export interface GroupSample {
  name: string;
  consumers: number;
  pending: number;
  /** Redis 7.0+; null before or when Redis cannot tell. */
  lag: number | null;
  entriesRead: number | null;
  /** Idle time of the lowest pending id (the entry waiting longest for an ack); null when none. */
  oldestPendingIdleMs: number | null;
  /** A group asked for with --group that the stream does not have. */
  missing?: true;
}

export interface DelayedSample {
  held: number;
  due: number;
}

export interface StreamSample {
  key: string;
  /** False when the key holds no stream (yet). */
  exists: boolean;
  length: number;
  /** XADDs in the stream's life (Redis 7.0+); null before. */
  entriesAdded: number | null;
  /** Length of the stream's dead-letter stream (default `{<key>}:dead`, or `top --dead-letter-key`). */
  deadLetters: number;
  /**
   * Delayed entries held for the stream (`{<key>}:delayed`, docs/scheduling.md) and, of those, the
   * ones due on Redis' clock that no worker promoted yet; null when Redis refuses the keys or TIME
   * (an ACL from before delayed entries). Counted whether or not the stream exists yet.
   */
  delayed: DelayedSample | null;
  groups: GroupSample[];
  /**
   * Groups paused for every worker (`{<key>}:paused`; a partition and a partitioned stream's total
   * carry the partitioned stream's own, which covers them all).
   */
  pausedGroups: ReadonlySet<string>;
  /** A missing key that is a partitioned stream: its partition keys (sampled in its place). */
  partitionKeys?: readonly string[];
}

export interface TopSample {
  /** Local clock, for rates between two samples. */
  at: number;
  streams: StreamSample[];
}
