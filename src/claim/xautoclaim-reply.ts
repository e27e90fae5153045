/** One entry of an XAUTOCLAIM page: its id and its flat `[field, value, ...]` list. */
export interface AutoclaimEntry {
  id: string;
  flat: readonly (string | Buffer)[];
}

export interface AutoclaimPage {
  /** Where the next page starts; `0-0` at the end of the pending list. */
  cursor: string;
  /** Entries taken, in delivery order. Entries whose body is gone (Redis 6.2 nil entries) are left out. */
  entries: AutoclaimEntry[];
  /** Ids Redis (7.0+) found pending but deleted from the stream; always empty on 6.2. */
  deletedIds: string[];
}

/**
 * Reads an XAUTOCLAIM reply, RESP2 or RESP3 (the same nested arrays in both):
 * - Redis 7.0+: `[cursor, [[id, [f, v, ...]], ...], [deletedId, ...]]`;
 * - Redis 6.2: `[cursor, [...]]`, where an entry deleted from the stream comes back as a nil
 *   entry (`null`, or `[id, null]`). It holds no body, so it is not returned as a message.
 */
export function parseAutoclaimReply(reply: unknown): AutoclaimPage {
  if (!Array.isArray(reply) || reply.length < 2) {
    throw new Error(`unexpected XAUTOCLAIM reply: ${preview(reply)}`);
  }
  const [rawCursor, rawEntries, rawDeleted] = reply as [unknown, unknown, unknown];
  const cursor = text(rawCursor);
  if (cursor === undefined || !Array.isArray(rawEntries)) {
    throw new Error(`unexpected XAUTOCLAIM reply: ${preview(reply)}`);
  }
  const entries: AutoclaimEntry[] = [];
  for (const raw of rawEntries as unknown[]) {
    if (!Array.isArray(raw)) continue; // 6.2: a nil entry
    const id = text(raw[0]);
    const flat: unknown = raw[1];
    if (id === undefined || !Array.isArray(flat)) continue; // 6.2: [id, nil]
    entries.push({ id, flat: flat as (string | Buffer)[] });
  }
  const deletedIds: string[] = [];
  if (Array.isArray(rawDeleted)) {
    for (const raw of rawDeleted as unknown[]) {
      const id = text(raw);
      if (id !== undefined) deletedIds.push(id);
    }
  }
  return { cursor, entries, deletedIds };
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString();
  return undefined;
}

function preview(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 200) ?? String(value);
  } catch {
    return String(value);
  }
}
