/** What `DeadLetterService.redrive` and `purge` return. */

export type RedriveStatus =
  | 'redriven'
  /** No such dead letter (already redriven or purged). */
  | 'not_found'
  /** A tombstone carries no body: nothing to redrive (purge it). */
  | 'tombstone'
  /** The dead letter came from another stream. */
  | 'other_stream'
  /** The entry has no dead-letter header. */
  | 'not_dead_letter';

export interface RedriveResult {
  stream: string;
  deadLetterKey: string;
  /** Dead letters re-added to `stream` (as new entries) and removed from the dead-letter stream. */
  redriven: { deadLetterId: string; newId: string }[];
  /** Dead letters left where they are, with the reason. */
  skipped: { deadLetterId: string; status: Exclude<RedriveStatus, 'redriven'> }[];
  /** On a partitioned stream (`'all'` only): each partition's result; the lists above concatenate them. */
  partitions?: RedriveResult[];
}

export interface PurgeResult {
  stream: string;
  deadLetterKey: string;
  /** Dead letters deleted. */
  purged: number;
  /** Requested ids that were not there (explicit ids only). */
  notFound: string[];
  /** Requested ids left alone: a dead letter of another stream, or an entry without the dead-letter header. */
  skipped: { deadLetterId: string; status: 'other_stream' | 'not_dead_letter' }[];
  /** On a partitioned stream (`'all'` only): each partition's result; `purged` sums them. */
  partitions?: PurgeResult[];
}
