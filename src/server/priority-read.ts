import { checkLanesShareSlot } from '../priorities/priority-lanes.js';
import type { RedisClient } from '../redis/connection.js';
import type { StreamBinding } from './in-flight.js';
import { forEachStreamOfRawReply } from './read-reply.js';
import { serverScripts, type ServerScriptCommands } from './scripts/loader.js';

/**
 * The starvation bound: a lane below the highest that has entries waiting gets at least one entry
 * in the first read after this reader took this many entries without giving it one.
 */
export const STARVATION_LIMIT = 10;

/**
 * How the reader of one pattern's priority lanes (`extras.priorities`, one binding per lane,
 * highest first) reads new entries, instead of one XREADGROUP over all its streams (which takes
 * COUNT from each stream alike).
 *
 * A read fills a budget of `count × lanes` entries (the slots the reader reserved) highest lane
 * first, in one script call (scripts/priority-read.lua); a lane that is due (`STARVATION_LIMIT`
 * entries read since it last got one) is offered one entry whatever the lanes above it take. A
 * read that found nothing is followed by a blocking XREADGROUP over every lane with COUNT 1 (a
 * script cannot block): it returns with the first entry to arrive, at most one per lane, and the
 * next read fills again. Like a native XREADGROUP, a fill fails with NOGROUP before it reads any
 * lane when one lane's group is gone: nothing taken is left out of a reply.
 *
 * Redis 8.10's `XREADGROUP … MAXCOUNT` caps a whole reply across streams, but nothing we can check
 * says it fills the streams in the order given, and one XREADGROUP has one COUNT for every stream,
 * so it cannot ask a due lane for just one entry: the script is used on every server, and MAXCOUNT
 * is not probed.
 */
export class PriorityRead {
  /** The last fill found nothing: the next read blocks until an entry arrives. */
  private waitNext = false;
  /** Per lane stream below the highest: entries read since it last got one, or was offered one and had none waiting. */
  private readonly owed: Map<string, number>;
  /** The lanes the read in flight offered one entry whatever came first. */
  private due: ReadonlySet<string> = NO_LANES;
  private readonly scripts: ServerScriptCommands;

  constructor(
    lanes: readonly StreamBinding[],
    private readonly group: string,
    private readonly consumer: string,
    private readonly blockMs: number,
    client: RedisClient,
    private readonly readsBytes: boolean,
    /** The reader's XREADGROUP (text or bytes as the group is read). */
    private readonly xreadgroup: (...args: (string | number)[]) => Promise<unknown>,
  ) {
    this.scripts = serverScripts(client);
    this.owed = new Map(lanes.slice(1).map((lane) => [lane.stream, 0]));
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
    return new PriorityRead(bindings, first.group, consumer, blockMs, client, readsBytes, xreadgroup);
  }

  /**
   * One read of `lanes` (the readable ones, highest first), `count` entries per lane reserved.
   * The reply has XREADGROUP's shape, lanes in priority order.
   */
  read(lanes: readonly StreamBinding[], count: number): Promise<unknown> {
    const streams = lanes.map((lane) => lane.stream);
    if (this.waitNext) {
      this.due = NO_LANES;
      return this.xreadgroup('GROUP', this.group, this.consumer, 'COUNT', 1, 'BLOCK', this.blockMs, 'STREAMS', ...streams, ...streams.map(() => '>'));
    }
    const due = new Set(streams.filter((stream) => (this.owed.get(stream) ?? 0) >= STARVATION_LIMIT));
    this.due = due;
    const keysThenArgs = [...streams, this.group, this.consumer, count * streams.length, ...streams.map((stream) => (due.has(stream) ? '1' : '0'))];
    return this.readsBytes
      ? this.scripts.nrsPriorityReadBuffer(streams.length, ...keysThenArgs)
      : this.scripts.nrsPriorityRead(streams.length, ...keysThenArgs);
  }

  /**
   * After a read answered `reply`: each lane's debt grows by the entries others got, and is cleared
   * for a lane that got some or was due and had none (nothing waiting, nothing owed). A fill that
   * found nothing makes the next read wait; a wait is followed by a fill.
   */
  answered(reply: unknown): void {
    const got = new Map<string, number>();
    let delivered = 0;
    forEachStreamOfRawReply(reply, (stream, entries) => {
      got.set(stream, entries.length);
      delivered += entries.length;
    });
    for (const [stream, owed] of this.owed) {
      this.owed.set(stream, got.has(stream) || this.due.has(stream) ? 0 : owed + delivered);
    }
    this.waitNext = !this.waitNext && delivered === 0;
  }
}

const NO_LANES: ReadonlySet<string> = new Set();

/** On a Cluster (`perSlot`) every pattern's lanes must share a hash slot: they are read in one call. */
export function checkLaneSlots(bindings: readonly StreamBinding[]): void {
  const checked = new Set<string>();
  for (const { priorityOf, priorities, pattern } of bindings) {
    if (priorityOf === undefined || priorities === undefined || checked.has(priorityOf)) continue;
    checked.add(priorityOf);
    checkLanesShareSlot(`extras.priorities (handler "${pattern}")`, priorityOf, priorities);
  }
}
