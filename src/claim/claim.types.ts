import type { StreamFields } from '../codec/wire-format.js';

export const FETCH_TYPES = ['FETCH', 'FETCH_ONE', 'STORE', 'NONE'] as const;

/**
 * How taken entries are returned: `FETCH` in `messages`, `FETCH_ONE` one entry in `message`,
 * `STORE` in an NDJSON file at `uri`, `NONE` not at all (ids only).
 */
export type FetchType = (typeof FETCH_TYPES)[number];

export interface ClaimOptions<F extends FetchType = FetchType> {
  /** Stream key. */
  key: string;
  /** Consumer group whose pending entries are scanned; it must exist. */
  group: string;
  /** Consumer the taken entries become pending for. Use a stable name for the recovery role. */
  consumer: string;
  /**
   * Required. Only entries idle at least this long are taken: milliseconds, or an ISO-8601
   * duration such as `PT10M`. Truncated to whole milliseconds; must be at least 1 ms.
   */
  minIdleTime: number | string;
  /** Page size (XAUTOCLAIM COUNT), 1..10000, default 100; lowered to the remaining `maxRecords`. */
  count?: number;
  /** Entries one run may take, 1..10000, default 100. */
  maxRecords?: number;
  /** XAUTOCLAIM calls one run may make, 1..1000, default 10. */
  maxPages?: number;
  /** Where the scan starts: `0-0` (default) or the `cursor` of an earlier run. */
  startId?: string;
  /** Default `FETCH`. */
  fetchType?: F;
}

/** A taken entry, exactly as stored: no decoding, fields in stream order. */
export interface ClaimedMessage {
  stream: string;
  id: string;
  fields: StreamFields;
}

export interface ClaimResultBase {
  key: string;
  group: string;
  consumer: string;
  /** Entries taken by this run (= `ids.length`). */
  count: number;
  /** Ids of the taken entries in delivery order, ready for `ack`. Filled for every fetch type. */
  ids: string[];
  /** `0-0` when the scan reached the end of the pending list; otherwise the next run's `startId`. */
  cursor: string;
  /** True only when the cursor reached `0-0`. */
  completed: boolean;
  /** XAUTOCLAIM calls made. */
  pages: number;
  /** Pending entries found deleted or trimmed from the stream (Redis 7.0+), the first 1000. */
  deletedIds: string[];
  /** All such entries across pages. */
  deletedCount: number;
}

export interface FetchClaimResult extends ClaimResultBase {
  messages: ClaimedMessage[];
}

export interface FetchOneClaimResult extends ClaimResultBase {
  /** The taken entry, or null when nothing was taken. */
  message: ClaimedMessage | null;
}

export interface StoreClaimResult extends ClaimResultBase {
  /** `file://` URL of the NDJSON file holding the taken entries, one `{stream,id,fields}` a line. */
  uri: string;
}

export type NoneClaimResult = ClaimResultBase;

export type ClaimResult = FetchClaimResult | FetchOneClaimResult | StoreClaimResult | NoneClaimResult;

/** The result type that goes with a fetch type (`FETCH` when none is given). */
export type ClaimResultFor<F extends FetchType> = [FetchType] extends [F]
  ? ClaimResult
  : F extends 'FETCH'
    ? FetchClaimResult
    : F extends 'FETCH_ONE'
      ? FetchOneClaimResult
      : F extends 'STORE'
        ? StoreClaimResult
        : NoneClaimResult;

/** What `StreamClaimService` reads from the module options (or takes by hand). */
export interface StreamClaimServiceOptions {
  /** Directory of STORE files; default `os.tmpdir()/nestjs-redis-streams`. */
  storeDirectory?: string;
}

/** The part of the module options the claim service reads. */
export interface ClaimModuleOptions {
  claim?: StreamClaimServiceOptions;
}
