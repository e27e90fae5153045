import type { IncomingEntry } from './in-flight.js';

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
  if (!Array.isArray(reply) || reply.length === 0) return;
  if (Array.isArray(reply[0])) {
    for (const pair of reply as unknown[][]) onStream(String(pair[0]), toEntries(pair[1], deliveryCount));
    return;
  }
  for (let i = 0; i + 1 < reply.length; i += 2) onStream(String(reply[i]), toEntries(reply[i + 1], deliveryCount));
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

/** The entries whose body is still there, as they are when none is missing (the usual case: no copy). */
export function liveEntries(entries: ReadEntry[]): IncomingEntry[] {
  for (const entry of entries) {
    if (entry.flat === null) return entries.filter((e) => e.flat !== null) as IncomingEntry[];
  }
  return entries as IncomingEntry[];
}
