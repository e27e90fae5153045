/**
 * Key naming. Every companion key (dead letters, handoff markers) shares the hash slot of its
 * stream so one Lua script may touch both on Redis Cluster, and no two streams share one.
 */

/**
 * The hash tag Redis Cluster uses for `key`, or `undefined` when the whole key is hashed: the
 * text between the first `{` and the first `}` after it, if not empty.
 */
export function hashTagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open === -1) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close === -1 || close === open + 1) return undefined;
  return key.slice(open + 1, close);
}

/** The Redis Cluster hash slot of `key` (CRC16-XMODEM of its hash tag or of the whole key, mod 16384). */
export function hashSlotOf(key: string): number {
  return crc16(Buffer.from(hashTagOf(key) ?? key, 'utf8')) & 0x3fff;
}

/**
 * A key of `stream`'s companion data, in `stream`'s hash slot, distinct for every stream:
 * - `orders` → `{orders}:<suffix>` (the name becomes the hash tag);
 * - `{orders}:eu` → `{orders}:eu:<suffix>` (the stream's own tag is kept);
 * - `{orders}` → `{orders}:<suffix>-braced` (else it would be the key of `orders`);
 * - a name Redis hashes whole although it holds a `}` (`orders}x`, `{}x`) cannot be a hash tag:
 *   `{<t>}orders}x:<suffix>-slot`, where `<t>` is the first short tag hashing to the stream's slot.
 * Only the first two forms end with `:<suffix>`, and each form can be read back to its stream.
 */
export function companionKey(stream: string, suffix: string): string {
  const tag = hashTagOf(stream);
  if (tag !== undefined) return stream === `{${tag}}` ? `${stream}:${suffix}-braced` : `${stream}:${suffix}`;
  if (!stream.includes('}')) return `{${stream}}:${suffix}`;
  return `{${tagForSlot(hashSlotOf(stream))}}${stream}:${suffix}-slot`;
}

export function deadLetterKey(stream: string): string {
  return companionKey(stream, 'dead');
}

/** Pattern → stream key, with an optional namespace prefix (`prefix` is used as given). */
export function streamKeyFor(pattern: string, prefix = ''): string {
  return `${prefix}${pattern}`;
}

const tagsBySlot = new Map<number, string>();

/** The first base-36 number (as text) whose slot is `slot`; under 90k CRCs for any slot, cached. */
function tagForSlot(slot: number): string {
  let tag = tagsBySlot.get(slot);
  for (let n = 0; tag === undefined; n++) {
    const candidate = n.toString(36);
    if (hashSlotOf(candidate) === slot) tag = candidate;
  }
  tagsBySlot.set(slot, tag);
  return tag;
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}
