/**
 * The entry size assumed before any entry was seen. Large enough that the first read of small
 * entries is a full one at the default cap (64 MiB / 2 / 64 KiB = 512 ≥ readBatch); a first read
 * of larger entries overshoots the cap once, by COUNT × (size − 64 KiB) (docs/server.md).
 */
export const FIRST_READ_ENTRY_BYTES = 64 * 1024;

/**
 * The byte side of flow control (`maxPrefetchBytes`): bytes of the entries held (see `entryBytes`),
 * the most ever held, what reads in progress expect, and the expected size of the next entries.
 */
export class ByteBudget {
  private held = 0;
  private peak = 0;
  private reserved = 0;
  /** Expected size of the next entries read: a guess until the first entry was seen. */
  private estimate = FIRST_READ_ENTRY_BYTES;
  private sizeSeen = false;

  constructor(readonly maxBytes: number) {}

  /** Bytes held now and the most held at once since the start (for tests and sizing). */
  bytesHeld(): { held: number; peak: number } {
    return { held: this.held, peak: this.peak };
  }

  /**
   * Entries one read may fetch within the byte cap at the estimated entry size: what is left under
   * the cap, and at most half of it per read (so a read is in flight while the previous one is
   * handled, as with prefetch; and the reply's transient copies stay within half the cap).
   */
  entriesWithinCap(): number {
    const room = Math.min(this.maxBytes - this.held - this.reserved, this.maxBytes / 2);
    return room <= 0 ? 0 : Math.floor(room / this.estimate);
  }

  /** Entries in half the byte cap at the estimated size: a read this large is worth waiting for. */
  entriesInHalfCap(): number {
    return Math.floor(this.maxBytes / 2 / this.estimate);
  }

  /** No read expects bytes now. */
  noneReserved(): boolean {
    return this.reserved === 0;
  }

  /** Reserves the bytes `entries` are expected to take; returns them (for `unreserve`). */
  reserve(entries: number): number {
    const bytes = entries * this.estimate;
    this.reserved += bytes;
    return bytes;
  }

  unreserve(bytes: number): void {
    this.reserved -= bytes;
  }

  /**
   * Counts admitted bytes and updates the size estimate: it rises at once to a larger batch's
   * average (so the next read is sized for it) and falls slowly (a few small entries do not
   * let a read fetch many large ones).
   */
  hold(bytes: number, entries: number): void {
    this.held += bytes;
    if (this.held > this.peak) this.peak = this.held;
    const average = Math.max(1, bytes / entries);
    this.estimate = this.sizeSeen ? Math.max(average, 0.75 * this.estimate + 0.25 * average) : average;
    this.sizeSeen = true;
  }

  free(bytes: number): void {
    this.held -= bytes;
  }
}
