import { checkLanesShareSlot } from '../priorities/priority-lanes.js';
import type { RedisClient } from '../redis/connection.js';
import type { StreamBinding } from './in-flight.js';
import { serverScripts, type ServerScriptCommands } from './scripts/loader.js';

/**
 * How the reader of one pattern's priority lanes (`extras.priorities`, one binding per lane,
 * highest first) reads new entries, instead of one XREADGROUP over all its streams (which takes
 * COUNT from each stream alike).
 *
 * A read fills a budget of `count × lanes` entries (the slots the reader reserved) highest lane
 * first, in one script call (scripts/priority-read.lua). The starvation bound: every read offers each
 * lane below the highest at least one entry of that budget, so a lane with entries waiting is served
 * in every read whatever floods the lanes above it. A read that found nothing is followed by a
 * blocking XREADGROUP over every lane with COUNT 1 (the script cannot block): it returns with the
 * first entry to arrive, at most one per lane, and the next read fills again.
 *
 * Redis 8.10's `XREADGROUP … MAXCOUNT` caps a whole reply across streams, but nothing we can check
 * says it fills the streams in the order given, so the script is used on every server.
 */
export class PriorityRead {
  /** The last fill found nothing: the next read blocks until an entry arrives. */
  private waitNext = false;
  private readonly scripts: ServerScriptCommands;

  constructor(
    private readonly group: string,
    private readonly consumer: string,
    private readonly blockMs: number,
    client: RedisClient,
    private readonly readsBytes: boolean,
    /** The reader's XREADGROUP (text or bytes as the group is read). */
    private readonly xreadgroup: (...args: (string | number)[]) => Promise<unknown>,
  ) {
    this.scripts = serverScripts(client);
  }

  /** A reader's `PriorityRead` when its bindings are one pattern's lanes, else `undefined`. */
  static of(
    bindings: readonly StreamBinding[],
    consumer: string,
    blockMs: number,
    client: RedisClient,
    readsBytes: boolean,
    xreadgroup: (...args: (string | number)[]) => Promise<unknown>,
  ): PriorityRead | undefined {
    const first = bindings[0];
    if (first?.priorityOf === undefined) return undefined;
    return new PriorityRead(first.group, consumer, blockMs, client, readsBytes, xreadgroup);
  }

  /**
   * One read of `lanes` (the readable ones, highest first), `count` entries per lane reserved.
   * The reply has XREADGROUP's shape, lanes in priority order.
   */
  read(lanes: readonly StreamBinding[], count: number): Promise<unknown> {
    const streams = lanes.map((lane) => lane.stream);
    if (this.waitNext) {
      return this.xreadgroup('GROUP', this.group, this.consumer, 'COUNT', 1, 'BLOCK', this.blockMs, 'STREAMS', ...streams, ...streams.map(() => '>'));
    }
    const args = [streams.length, ...streams, this.group, this.consumer, count * streams.length] as const;
    return this.readsBytes ? this.scripts.nrsPriorityReadBuffer(...args) : this.scripts.nrsPriorityRead(...args);
  }

  /** After a read answered with `delivered` entries: a fill that found none makes the next read wait; a wait is followed by a fill. */
  answered(delivered: number): void {
    this.waitNext = !this.waitNext && delivered === 0;
  }
}

/** On a Cluster (`perSlot`) every pattern's lanes must share a hash slot: they are read in one call. */
export function checkLaneSlots(bindings: readonly StreamBinding[]): void {
  const checked = new Set<string>();
  for (const { priorityOf, priorities, pattern } of bindings) {
    if (priorityOf === undefined || priorities === undefined || checked.has(priorityOf)) continue;
    checked.add(priorityOf);
    checkLanesShareSlot(`extras.priorities (handler "${pattern}")`, priorityOf, priorities);
  }
}
