/** XPENDING summary of one group. */
export interface PendingSummary {
  key: string;
  group: string;
  /** Entries delivered and not yet acknowledged. */
  count: number;
  /** Lowest and highest pending id; null when nothing is pending. */
  smallest: string | null;
  largest: string | null;
  /** Consumers that have pending entries, with how many. */
  consumers: { name: string; pending: number }[];
}

export interface PendingRangeOptions {
  /** `-` (default), a stream id, or `(id` for an exclusive start (Redis 6.2+). */
  start?: string;
  /** `+` (default), a stream id, or `(id`. */
  end?: string;
  /** 1..10000, default 100. */
  count?: number;
  /** Only this consumer's entries. */
  consumer?: string;
  /** Only entries idle at least this long (milliseconds or ISO-8601 such as PT10M; Redis 6.2+). */
  minIdleTime?: number | string;
  /**
   * Consumer holding failed entries during their retry backoff (the servers' `recovery.retryConsumer`):
   * its rows get `retry`. Default `retry`; `false`: no `retry` details (no extra command).
   */
  retryConsumer?: string | false;
}

/** One pending entry (XPENDING extended form). */
export interface PendingEntry {
  id: string;
  consumer: string;
  /** Milliseconds since it was last delivered or claimed. */
  idleMs: number;
  /** Times it was delivered (XREADGROUP, XCLAIM, XAUTOCLAIM). */
  deliveryCount: number;
  /** Only on entries of the retry consumer: a handler failed, the entry waits for its next delivery. */
  retry?: PendingRetry;
}

/** A failed entry waiting for its retry (from its retry record; `null` fields when the record expired). */
export interface PendingRetry {
  /** When recovery takes it again, epoch ms on the Redis server's clock (it may be in the past: due, waiting for a tick or a free worker). */
  nextRetryAt: number | null;
  /** The wait after its failure, in ms. */
  delayMs: number | null;
  /** Consumer whose handler failed. */
  failedBy: string | null;
  /** Text of the handler's error. */
  lastError: string | null;
}

/** One consumer group (XINFO GROUPS). */
export interface GroupInfo {
  name: string;
  consumers: number;
  pending: number;
  lastDeliveredId: string;
  /** Redis 7.0+; null before, or when Redis cannot tell. */
  entriesRead: number | null;
  /** Entries not yet delivered to the group (Redis 7.0+, a heuristic); null when unknown. */
  lag: number | null;
}

/** One consumer of a group (XINFO CONSUMERS). */
export interface ConsumerInfo {
  name: string;
  pending: number;
  /** Since its last attempted interaction (7.2+) or last successful one (before 7.2). */
  idleMs: number;
  /** Since its last successful interaction (Redis 7.2+; -1 if never); null on older servers. */
  inactiveMs: number | null;
}

/** The stream itself (XINFO STREAM). */
export interface StreamInfo {
  key: string;
  length: number;
  /** First and last entry ids; null for an empty stream. */
  firstEntryId: string | null;
  lastEntryId: string | null;
  lastGeneratedId: string | null;
  groups: number;
  /** Redis 7.0+; null before. */
  entriesAdded: number | null;
  maxDeletedEntryId: string | null;
  recordedFirstEntryId: string | null;
}
