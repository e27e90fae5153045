import type { DeadLetterReason } from './dead-letter-format.js';

/** A dead letter written by a server (recovery or a decode error); given to `onDeadLetter` and the `deadLetter` event. */
export interface DeadLetterNotice {
  stream: string;
  group: string;
  /** Id the entry had in `stream`. */
  id: string;
  reason: DeadLetterReason;
  /** Last handler error of the entry, whichever worker saw it (`''` when unknown), or the decode error. */
  error: string;
  /** Redis delivery count when it was moved. */
  deliveryCount: number;
  /** Consumer that held the entry when it was moved. */
  consumer: string;
  deadLetterKey: string;
  deadLetterId: string;
  /** True for a header-only dead letter: the entry was trimmed or deleted while pending. */
  tombstone: boolean;
}

export type EntriesLostReason =
  /** Pending entries whose body was trimmed or XDEL'ed: acked away (nothing left to handle). */
  | 'trimmed_pending'
  /** Entries trimmed before the group ever read them (the group lags more than the stream holds). */
  | 'trimmed_undelivered';

/** Entries that can no longer be handled. Never silent: logged, counted and emitted. */
export interface EntriesLostNotice {
  stream: string;
  group: string;
  reason: EntriesLostReason;
  /** How many (for `trimmed_undelivered` a lower bound: lag minus stream length). */
  count: number;
  /** The ids, when known (`trimmed_pending`), at most 1000. */
  ids: string[];
  /** `trimmed_undelivered`: the group's last-delivered id and the stream's first entry. */
  lastDeliveredId?: string;
  firstEntryId?: string | null;
}

/** A renewal found an in-flight entry no longer ours: another consumer took it (our lease lapsed) or it is gone. */
export interface LeaseLostNotice {
  stream: string;
  group: string;
  id: string;
  reason: 'not_owner' | 'not_pending' | 'deleted';
  /** Who holds it now (`not_owner`). */
  owner: string | null;
}

/** Entries recovery claimed from idle owners and handed to this server's handlers. */
export interface RecoveredNotice {
  stream: string;
  group: string;
  ids: string[];
}

/** What recovery reports through its `emit` callback (the server forwards them as its own events). */
export interface RecoveryEventMap {
  deadLetter: DeadLetterNotice;
  entriesLost: EntriesLostNotice;
  leaseLost: LeaseLostNotice;
  recovered: RecoveredNotice;
  error: Error;
}

export type RecoveryEmit = <K extends keyof RecoveryEventMap>(event: K, payload: RecoveryEventMap[K]) => void;
