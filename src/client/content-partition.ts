/**
 * The partition of an emit that Redis deduplicates by its content (IDMPAUTO: no `partitionKey`, no
 * `idempotencyKey`) on a partitioned pattern: picked from the entry's own fields, so the same data
 * emitted again (the caller's retry, a restart with the same `producerId`) lands in the partition
 * whose IDMP history holds the first write. Round robin would put it in the next partition, where
 * Redis has never seen it, and write it twice.
 *
 * Like IDMPAUTO's own hash it ignores the order of the field/value pairs: each pair is hashed on
 * its own (FNV-1a 32 over the UTF-8 bytes of the name, a separator byte, and the value) and the
 * pair hashes are added. Only `args[from…]` count: the caller passes the fields before `headers`
 * (which holds the span's trace context, new on every emit); entries equal in every field are
 * equal in those, so they meet in one partition.
 */
export function contentPartitionOf(args: readonly (string | Buffer)[], from: number, count: number): number {
  let sum = 0;
  for (let i = from; i + 1 < args.length; i += 2) {
    let hash = fnv1a(FNV_OFFSET, args[i] as string | Buffer);
    hash = step(hash, PAIR_SEPARATOR);
    hash = fnv1a(hash, args[i + 1] as string | Buffer);
    sum = (sum + hash) >>> 0;
  }
  return sum % count;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
/** Never a byte of UTF-8 text; in a Buffer it only costs a hash collision, which routing tolerates. */
const PAIR_SEPARATOR = 0xff;

function step(hash: number, byte: number): number {
  return Math.imul(hash ^ byte, FNV_PRIME) >>> 0;
}

/**
 * FNV-1a over the bytes Redis receives: a Buffer's, or a string's UTF-8 encoding, computed as it
 * goes (no copy). A lone surrogate is encoded as U+FFFD, as Node's UTF-8 encoder writes it.
 */
function fnv1a(hash: number, value: string | Buffer): number {
  if (typeof value !== 'string') {
    for (const byte of value) hash = step(hash, byte);
    return hash;
  }
  for (let i = 0; i < value.length; i++) {
    let code = value.charCodeAt(i);
    if (code < 0x80) {
      hash = step(hash, code);
      continue;
    }
    if (code < 0x800) {
      hash = step(step(hash, 0xc0 | (code >> 6)), 0x80 | (code & 0x3f));
      continue;
    }
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < value.length) {
      const low = value.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        const point = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        hash = step(hash, 0xf0 | (point >> 18));
        hash = step(hash, 0x80 | ((point >> 12) & 0x3f));
        hash = step(hash, 0x80 | ((point >> 6) & 0x3f));
        hash = step(hash, 0x80 | (point & 0x3f));
        i++;
        continue;
      }
    }
    if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd;
    hash = step(step(step(hash, 0xe0 | (code >> 12)), 0x80 | ((code >> 6) & 0x3f)), 0x80 | (code & 0x3f));
  }
  return hash;
}
