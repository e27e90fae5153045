/**
 * Helpers for replies whose shape differs between RESP2 and RESP3 or between clients: a map can
 * arrive as a flat `[k1, v1, k2, v2]` array (RESP2, and ioredis 6 with RESP3 today), an array of
 * `[k, v]` pairs, a `Map`, or a plain object.
 */
export type ReplyRecord = ReadonlyMap<string, unknown>;

export function asRecord(value: unknown): ReplyRecord {
  const record = new Map<string, unknown>();
  if (value instanceof Map) {
    for (const [k, v] of value as Map<unknown, unknown>) record.set(String(k), v);
  } else if (Array.isArray(value)) {
    if (value.length > 0 && value.every((item) => Array.isArray(item) && item.length === 2)) {
      for (const [k, v] of value as [unknown, unknown][]) record.set(String(k), v);
    } else {
      for (let i = 0; i + 1 < value.length; i += 2) record.set(String(value[i]), value[i + 1]);
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) record.set(k, v);
  }
  return record;
}

/** A list of maps (XINFO GROUPS / CONSUMERS); a RESP3 map of maps is not expected but tolerated. */
export function asRecordList(value: unknown): ReplyRecord[] {
  if (Array.isArray(value)) return value.map(asRecord);
  return [];
}

export function asText(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString();
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  return null;
}

/** Integers arrive as numbers, or as strings (XPENDING per-consumer counts); null stays null. */
export function asNumber(value: unknown): number | null {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  const text = asText(value);
  if (text === null || text.trim() === '') return null;
  const parsed = Number(text);
  return Number.isFinite(parsed) ? parsed : null;
}

export function requiredNumber(record: ReplyRecord, field: string): number {
  return asNumber(record.get(field)) ?? 0;
}

export function optionalNumber(record: ReplyRecord, field: string): number | null {
  return record.has(field) ? asNumber(record.get(field)) : null;
}

/** A stream entry `[id, [f, v, ...]]` (or nil) → its id. */
export function entryId(value: unknown): string | null {
  if (!Array.isArray(value)) return null;
  return asText(value[0]);
}
