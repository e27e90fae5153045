import { RedisStreamsOptionError } from '../errors.js';
import { describe, integerOption, nonEmptyStringOption, streamIdOption } from '../validation.js';
import { durationMillisOption } from '../duration.js';
import { FETCH_TYPES, type ClaimOptions, type FetchType } from './claim.types.js';
import { resolveFieldsShape, type FieldEncoding, type FieldsFormat } from './claimed-fields.js';

export const CLAIM_DEFAULTS = {
  count: 100,
  maxRecords: 100,
  maxPages: 10,
  startId: '0-0',
  fetchType: 'FETCH',
  fieldsFormat: 'object',
  encoding: 'utf8',
} as const;

export const CLAIM_LIMITS = {
  count: { min: 1, max: 10_000 },
  maxRecords: { min: 1, max: 10_000 },
  maxPages: { min: 1, max: 1_000 },
} as const;

/** Claim options after validation and defaults; what the XAUTOCLAIM loop runs on. */
export interface ResolvedClaimOptions {
  key: string;
  group: string;
  consumer: string;
  minIdleMs: number;
  count: number;
  maxRecords: number;
  maxPages: number;
  startId: string;
  fetchType: FetchType;
  fieldsFormat: FieldsFormat;
  encoding: FieldEncoding;
}

/** Validates every option (naming the first bad one) before any command is sent. */
export function resolveClaimOptions(options: ClaimOptions<FetchType, FieldsFormat>): ResolvedClaimOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new RedisStreamsOptionError('options', `must be an object, got ${describe(options)}`);
  }
  const key = nonEmptyStringOption('key', options.key);
  const group = nonEmptyStringOption('group', options.group);
  const consumer = nonEmptyStringOption('consumer', options.consumer);
  const minIdleMs = durationMillisOption('minIdleTime', options.minIdleTime);
  const fetchType = fetchTypeOption(options.fetchType);
  let count = integerOption('count', options.count, CLAIM_DEFAULTS.count, CLAIM_LIMITS.count.min, CLAIM_LIMITS.count.max);
  let maxRecords = integerOption(
    'maxRecords',
    options.maxRecords,
    CLAIM_DEFAULTS.maxRecords,
    CLAIM_LIMITS.maxRecords.min,
    CLAIM_LIMITS.maxRecords.max,
  );
  const maxPages = integerOption(
    'maxPages',
    options.maxPages,
    CLAIM_DEFAULTS.maxPages,
    CLAIM_LIMITS.maxPages.min,
    CLAIM_LIMITS.maxPages.max,
  );
  const startId = streamIdOption('startId', options.startId, CLAIM_DEFAULTS.startId);
  if (!fitsStreamId(startId)) {
    throw new RedisStreamsOptionError('startId', `parts must fit in 64 bits, got ${describe(startId)}`);
  }
  if (fetchType === 'FETCH_ONE') {
    // Never take an entry the caller cannot see.
    count = 1;
    maxRecords = 1;
  }
  const { fieldsFormat, encoding } = resolveFieldsShape(options);
  return { key, group, consumer, minIdleMs, count, maxRecords, maxPages, startId, fetchType, fieldsFormat, encoding };
}

function fetchTypeOption(value: unknown): FetchType {
  if (value === undefined) return CLAIM_DEFAULTS.fetchType;
  if (typeof value === 'string' && (FETCH_TYPES as readonly string[]).includes(value)) return value as FetchType;
  throw new RedisStreamsOptionError('fetchType', `must be one of ${FETCH_TYPES.join(', ')}; got ${describe(value)}`);
}

const MAX_ID_PART = 2n ** 64n - 1n;

/** Both parts of `ms-seq` fit Redis' unsigned 64-bit integers (the syntax check allows 20 digits). */
function fitsStreamId(id: string): boolean {
  return id.split('-').every((part) => BigInt(part) <= MAX_ID_PART);
}
