import { compareStreamIds } from '../../stream-ids.js';
import type { ResolvedBatch } from './batch-options.js';

/** What a gate needs of a queued entry: its stream id (batches are handed out in stream order). */
interface Queued {
  readonly id: string;
}

/**
 * The collector of one batch binding's handler lane: its queued entries leave together, as one
 * batch, once `size` of them are there or `waitMs` passed since the first of them was queued. The
 * entries stay in the lane's queue (and hold their prefetch slots) while they wait, so a close()
 * hands them off as any other unstarted entry. One timer per waiting batch, never one per entry.
 */
export class BatchGate<Entry extends Queued> {
  private timer: NodeJS.Timeout | undefined;
  /** `waitMs` passed since the first queued entry: the next free handler slot takes what is there. */
  private due = false;

  constructor(
    private readonly batch: ResolvedBatch,
    /** Called when the wait ended: the handler lanes start the batch if a handler slot is free. */
    private readonly wake: () => void,
  ) {}

  /** Entries were queued: the wait of the batch they start begins now (if none began yet). */
  queued(): void {
    if (this.timer === undefined && !this.due) this.arm();
  }

  /**
   * The next batch if one is ready (a full one, or what waited `waitMs`), taken from the front of
   * `queue` and sorted by id: undefined while the batch still fills.
   */
  take(queue: Entry[]): Entry[] | undefined {
    const { size, waitMs } = this.batch;
    if (queue.length < size && !this.due && waitMs > 0) return undefined;
    this.cancel();
    const taken = queue.length <= size ? queue.splice(0) : queue.splice(0, size);
    // What is left starts the next batch's wait now.
    if (queue.length > 0) this.arm();
    return inStreamOrder(taken);
  }

  /** Stops the timer (close, or the queue was taken for the handoff). */
  cancel(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.due = false;
  }

  private arm(): void {
    if (this.batch.waitMs === 0) return;
    this.timer = setTimeout(this.expire, this.batch.waitMs);
    // A batch still filling must not keep the process alive on its own.
    this.timer.unref();
  }

  private readonly expire = (): void => {
    this.timer = undefined;
    this.due = true;
    this.wake();
  };
}

/**
 * Entries of one stream in id order. Reads deliver them in order already (checked in one pass);
 * a redelivered or claimed entry that joined later is sorted into place.
 */
export function inStreamOrder<Entry extends Queued>(entries: Entry[]): Entry[] {
  for (let i = 1; i < entries.length; i++) {
    if (compareStreamIds((entries[i - 1] as Entry).id, (entries[i] as Entry).id) > 0) {
      return entries.sort((a, b) => compareStreamIds(a.id, b.id));
    }
  }
  return entries;
}

