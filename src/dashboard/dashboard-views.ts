/** The JSON the page reads: one refresh of the overview. Every name is data, never markup. */

export interface ConsumerView {
  name: string;
  pending: number;
  /** XINFO CONSUMERS `idle`: ms since its last attempted interaction (7.2+) or last successful one. */
  idleMs: number;
  /** Ms since its last successful interaction (Redis 7.2+); null before. */
  inactiveMs: number | null;
}

export interface GroupView {
  name: string;
  /** A handler of this process reads the stream in this group. */
  handled: boolean;
  pending: number;
  /** Entries not yet delivered to the group (Redis 7.0+); null when Redis cannot tell. */
  lag: number | null;
  /** Entries the group has read (Redis 7.0+): the page's out-rate is its change per second. */
  entriesRead: number | null;
  lastDeliveredId: string | null;
  consumers: ConsumerView[];
  /**
   * Paused for every worker (`pause`; kept on the stream's own name, so a partitioned stream's
   * pause shows on its total and on every partition), and since when (Redis' clock, ISO-8601).
   */
  paused: boolean;
  pausedAt: string | null;
  /** Consumers not sent (beyond OVERVIEW_CONSUMERS, overview-bounds.ts); absent when none. */
  consumersOmitted?: number;
}

export interface DelayedView {
  held: number;
  due: number;
}

export interface StreamView {
  /** The stream's name (a partition's key for a partition). */
  name: string;
  source: 'handlers' | 'option' | 'page' | 'partition';
  /** False when the key holds no stream (yet). */
  exists: boolean;
  length: number;
  /** XADDs in the stream's life (Redis 7.0+): the page's in-rate is its change per second. */
  entriesAdded: number | null;
  firstEntryId: string | null;
  lastEntryId: string | null;
  /** Entries in its dead-letter stream(s). */
  deadLetters: number;
  groups: GroupView[];
  /**
   * Its delayed entries (docs/scheduling.md): held, and of those due on Redis' clock but not
   * promoted yet (no worker promoted them yet). Null when Redis refused the delayed keys (an ACL
   * from before them) or could not count them; a partitioned stream's totals are null when a
   * partition's are.
   */
  delayed: DelayedView | null;
  /** A partitioned stream: each partition, in index order; the fields above are their totals. */
  partitions?: StreamView[];
  /** Why it could not be read (the key is not a stream, Redis refused), or undefined. */
  error?: string;
  /** Groups not sent (beyond OVERVIEW_GROUPS, overview-bounds.ts); absent when none. */
  groupsOmitted?: number;
  /** Partitions not sent (beyond OVERVIEW_PARTITIONS); absent when none. */
  partitionsOmitted?: number;
}

export interface OverviewView {
  /** Epoch ms on this host, for the page's rates. */
  at: number;
  /** A page of at most `maxStreams` streams, from `offset` of the streams shown (matching `match`). */
  streams: StreamView[];
  /** Streams shown in all (matching `match`), on every page. */
  total: number;
  /** Where this page starts among them. */
  offset: number;
  /** `offset` of the next page, null after the last. */
  next: number | null;
  /** Streams not on this page (`total` minus this page's). */
  omitted: number;
}
