export interface ReadEntry {
  readonly id: string;
  /** `[f1, v1, …]` as read (Buffers for a byte read); `null` when the entry was deleted or trimmed while pending (own-PEL re-reads only). */
  readonly flat: (string | Buffer)[] | null;
  readonly deliveryCount: number;
}

/**
 * Calls `onStream(stream, entries)` for each stream of an XREADGROUP reply. ioredis hands the
 * reply as nested pairs (`[[key, entries], …]`, RESP2) or, through `call` on RESP3, as the
 * flattened map (`[key, entries, key, entries]`); both are accepted.
 */
export function forEachStreamOfReply(
  reply: unknown,
  deliveryCount: number,
  onStream: (stream: string, entries: ReadEntry[]) => void,
): void {
  forEachStreamOfRawReply(reply, (stream, entries) => onStream(stream, toEntries(entries, deliveryCount)));
}

/** One entry of a reply as Redis sent it: `[id, [f1, v1, …]]` (`null` fields: deleted while pending). */
export type ReplyEntry = readonly [id: string | Buffer, flat: (string | Buffer)[] | null];

/**
 * `forEachStreamOfReply` without an object per entry: each stream's entries as the reply holds
 * them (a fresh read's entries become in-flight entries straight from there).
 */
export function forEachStreamOfRawReply(reply: unknown, onStream: (stream: string, entries: readonly ReplyEntry[]) => void): void {
  if (!Array.isArray(reply) || reply.length === 0) return;
  if (Array.isArray(reply[0])) {
    for (const pair of reply as unknown[][]) onStream(String(pair[0]), asEntries(pair[1]));
    return;
  }
  for (let i = 0; i + 1 < reply.length; i += 2) onStream(String(reply[i]), asEntries(reply[i + 1]));
}

const NO_ENTRIES: readonly ReplyEntry[] = [];

function asEntries(raw: unknown): readonly ReplyEntry[] {
  return Array.isArray(raw) ? (raw as ReplyEntry[]) : NO_ENTRIES;
}

function toEntries(raw: unknown, deliveryCount: number): ReadEntry[] {
  if (!Array.isArray(raw)) return [];
  const entries: ReadEntry[] = [];
  for (let i = 0; i < raw.length; i++) {
    // Index access, not destructuring: this runs once per entry read.
    const item = raw[i] as [string, (string | Buffer)[] | null];
    const flat = item[1];
    entries.push({ id: String(item[0]), flat: Array.isArray(flat) ? flat : null, deliveryCount });
  }
  return entries;
}
