import type { StreamFields } from '../codec/wire-format.js';
import type { FieldEncoding, FieldsFormat, StreamFieldPairs } from './claimed-fields.js';

export type { FieldEncoding, FieldsFormat, StreamFieldPairs } from './claimed-fields.js';

export const FETCH_TYPES = ['FETCH', 'FETCH_ONE', 'STORE', 'NONE'] as const;

/**
 * How taken entries are returned: `FETCH` in `messages`, `FETCH_ONE` one entry in `message`,
 * `STORE` in an NDJSON file at `uri`, `NONE` not at all (ids only).
 */
export type FetchType = (typeof FETCH_TYPES)[number];

export interface ClaimOptions<F extends FetchType = FetchType, P extends FieldsFormat = FieldsFormat> {
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
  /**
   * `object` (default): `fields` is `{ name: value }`: integer-like names (`2`, `10`) come first in
   * ascending order and of duplicate names the last wins, as in any JavaScript object. `pairs`:
   * `[[name, value], …]` in stream order with every duplicate (also in STORE files and CLI JSON).
   */
  fieldsFormat?: P;
  /** `utf8` (default): text, bytes that are not UTF-8 become U+FFFD. `base64`: names and values are base64 of their exact bytes. */
  encoding?: FieldEncoding;
}

/** A taken entry, as stored: no decoding. `fields` per `fieldsFormat` and `encoding`. */
export interface ClaimedMessage<Fields extends ClaimedFields = StreamFields> {
  stream: string;
  id: string;
  /** `{ name: value }` (`fieldsFormat: 'object'`, the default) or `[[name, value], …]` in stream order (`'pairs'`). */
  fields: Fields;
}

export type ClaimedFields = StreamFields | StreamFieldPairs;

/** The `fields` type of a `fieldsFormat`. */
export type FieldsOf<P extends FieldsFormat> = [FieldsFormat] extends [P] ? ClaimedFields : P extends 'pairs' ? StreamFieldPairs : StreamFields;

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

export interface FetchClaimResult<Fields extends ClaimedFields = StreamFields> extends ClaimResultBase {
  messages: ClaimedMessage<Fields>[];
}

export interface FetchOneClaimResult<Fields extends ClaimedFields = StreamFields> extends ClaimResultBase {
  /** The taken entry, or null when nothing was taken. */
  message: ClaimedMessage<Fields> | null;
}

export interface StoreClaimResult extends ClaimResultBase {
  /** `file://` URL of the NDJSON file holding the taken entries, one `{stream,id,fields}` a line. */
  uri: string;
}

export type NoneClaimResult = ClaimResultBase;

export type ClaimResult<Fields extends ClaimedFields = StreamFields> =
  | FetchClaimResult<Fields>
  | FetchOneClaimResult<Fields>
  | StoreClaimResult
  | NoneClaimResult;

/** The result type that goes with a fetch type (`FETCH` when none is given) and a fields type. */
export type ClaimResultFor<F extends FetchType, Fields extends ClaimedFields = StreamFields> = [FetchType] extends [F]
  ? ClaimResult<Fields>
  : F extends 'FETCH'
    ? FetchClaimResult<Fields>
    : F extends 'FETCH_ONE'
      ? FetchOneClaimResult<Fields>
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
