/**
 * Key naming. Every companion key (dead letters, handoff markers) shares the hash slot of its
 * stream so one Lua script may touch both on Redis Cluster.
 */

/** The hash tag Redis Cluster would use for `key`, or `undefined` when the whole key is hashed. */
export function hashTagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open === -1) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close === -1 || close === open + 1) return undefined;
  return key.slice(open + 1, close);
}

/** `orders` → `{orders}:<suffix>`; `{orders}:eu` → `{orders}:eu:<suffix>`; both hash like the stream. */
export function companionKey(stream: string, suffix: string): string {
  return hashTagOf(stream) === undefined ? `{${stream}}:${suffix}` : `${stream}:${suffix}`;
}

export function deadLetterKey(stream: string): string {
  return companionKey(stream, 'dead');
}

/** Pattern → stream key, with an optional namespace prefix (`prefix` is used as given). */
export function streamKeyFor(pattern: string, prefix = ''): string {
  return `${prefix}${pattern}`;
}
