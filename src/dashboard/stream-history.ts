import { Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { parseGroups, parseStreamInfo } from '../claim/inspection-replies.js';
import type { GroupInfo, StreamInfo } from '../claim/inspection.types.js';
import { batchThisTick } from '../redis/tick-batching.js';
import { DashboardContext } from './dashboard-context.js';
import { OVERVIEW_GROUPS } from './overview-bounds.js';
import type { StreamTarget } from './stream-targets.js';

/** Samples kept per series: an hour at the default `sampleInterval` of 10 s. */
export const HISTORY_POINTS = 360;
/** Most series kept at once (a stream's in/s and dead letters are two, a group's out/s, lag and pending three). */
export const MAX_SERIES = 4_000;
/** Most streams sampled a tick (the first of the overview's order). */
export const MAX_SAMPLED_STREAMS = 1_000;

/** One stream's series as `api/series` sends them: oldest first, one value per sample, null when unknown. */
export interface SeriesView {
  stream: string;
  /** ms between two samples (the `sampleInterval` option). */
  intervalMs: number;
  /** When each sample was taken (epoch ms on this host). */
  at: number[];
  /** Entries added per second since the sample before (Redis 7.0+). */
  inRate: (number | null)[];
  deadLetters: (number | null)[];
  groups: { name: string; outRate: (number | null)[]; lag: (number | null)[]; pending: (number | null)[] }[];
}

/** Fixed-size rings: one slot per sample, NaN where nothing was read. */
class Ring {
  readonly values = new Float64Array(HISTORY_POINTS).fill(Number.NaN);
}

interface GroupSeries {
  outRate: Ring;
  lag: Ring;
  pending: Ring;
  /** entries-read at the last sample, for the next rate. */
  lastRead: number | null;
}

interface StreamSeries {
  inRate: Ring;
  deadLetters: Ring;
  groups: Map<string, GroupSeries>;
  lastAdded: number | null;
  /** The tick it was last sampled in (series not sampled for a whole ring are dropped). */
  lastTick: number;
}

/** What one tick read of one stream (a partitioned stream's partitions summed). */
interface StreamReading {
  added: number | null;
  deadLetters: number;
  groups: Map<string, { read: number | null; lag: number | null; pending: number }>;
}

/**
 * The samples behind the page's charts, taken by the module on its own timer (every
 * `sampleInterval`), never per request: however many tabs draw charts, Redis sees one sampling a
 * tick. A tick reads, per stream key, XINFO STREAM, XINFO GROUPS and the XLEN of its dead
 * letters, all in one socket write. Memory is bounded: HISTORY_POINTS samples of at most
 * MAX_SERIES series (8 bytes a value), plus one ring of sample times.
 */
@Injectable()
export class StreamHistory implements OnModuleInit, OnModuleDestroy {
  private readonly times = new Float64Array(HISTORY_POINTS).fill(Number.NaN);
  private readonly streams = new Map<string, StreamSeries>();
  private series = 0;
  /** Samples taken so far; the ring slot of tick n is n % HISTORY_POINTS. */
  private ticks = 0;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly context: DashboardContext) {}

  onModuleInit(): void {
    const interval = this.context.options.sampleInterval;
    if (interval === 0) return;
    const tick = () => {
      // One sampling at a time: a slow Redis skips a tick rather than piling them up.
      if (this.running !== undefined) return;
      this.running = this.sample().catch(() => undefined).finally(() => (this.running = undefined));
    };
    this.timer = setInterval(tick, interval);
    this.timer.unref();
    tick();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Series kept now (each at most HISTORY_POINTS values). */
  seriesCount(): number {
    return this.series;
  }

  /** Takes one sample of every stream shown (at most MAX_SAMPLED_STREAMS). */
  async sample(): Promise<void> {
    const keys = this.context.targets();
    const targets = keys.targets.slice(0, MAX_SAMPLED_STREAMS);
    const deadLetterKeyOf = this.context.deadLetterKeyOf(keys);
    const redis = this.context.redis;
    batchThisTick(redis);
    const reads = targets.map((target) => Promise.all(keysOf(target).map((key) => Promise.all([
      redis.call('XINFO', 'STREAM', key).then((reply) => parseStreamInfo(key, reply)),
      redis.call('XINFO', 'GROUPS', key).then(parseGroups),
      redis.xlen(deadLetterKeyOf(key)),
    ]))).catch(() => null));
    const readings = await Promise.all(reads);
    const at = Date.now();
    const tick = this.ticks++;
    const slot = tick % HISTORY_POINTS;
    const previousAt = this.times[(tick + HISTORY_POINTS - 1) % HISTORY_POINTS]!;
    const seconds = tick === 0 ? Number.NaN : (at - previousAt) / 1000;
    this.times[slot] = at;
    targets.forEach((target, index) => {
      const reading = readings[index];
      this.record(target.name, reading === null || reading === undefined ? null : summed(reading), tick, slot, seconds);
    });
    // Every series' slot of this tick is written (NaN when not read); streams not sampled for a whole ring are dropped.
    for (const [name, stream] of this.streams) {
      if (stream.lastTick !== tick) clear(stream, slot);
      if (tick - stream.lastTick >= HISTORY_POINTS) this.drop(name, stream);
    }
  }

  /** The series of `stream` (a stream's name, as the overview shows it), or null when none are kept. */
  seriesOf(stream: string): SeriesView | null {
    const series = this.streams.get(stream);
    if (series === undefined) return null;
    const slots: number[] = [];
    for (let tick = Math.max(0, this.ticks - HISTORY_POINTS); tick < this.ticks; tick++) slots.push(tick % HISTORY_POINTS);
    const read = (ring: Ring) => slots.map((slot) => (Number.isNaN(ring.values[slot]!) ? null : ring.values[slot]!));
    return {
      stream,
      intervalMs: this.context.options.sampleInterval,
      at: slots.map((slot) => this.times[slot]!),
      inRate: read(series.inRate),
      deadLetters: read(series.deadLetters),
      groups: [...series.groups].map(([name, group]) => ({ name, outRate: read(group.outRate), lag: read(group.lag), pending: read(group.pending) })),
    };
  }

  private record(name: string, reading: StreamReading | null, tick: number, slot: number, seconds: number): void {
    let stream = this.streams.get(name);
    if (stream === undefined) {
      if (reading === null || this.series + 2 > MAX_SERIES) return;
      stream = { inRate: new Ring(), deadLetters: new Ring(), groups: new Map(), lastAdded: null, lastTick: tick };
      this.streams.set(name, stream);
      this.series += 2;
    }
    stream.lastTick = tick;
    if (reading === null) {
      clear(stream, slot);
      stream.lastAdded = null;
      return;
    }
    stream.inRate.values[slot] = rate(reading.added, stream.lastAdded, seconds);
    stream.lastAdded = reading.added;
    stream.deadLetters.values[slot] = reading.deadLetters;
    for (const [groupName, group] of stream.groups) if (!reading.groups.has(groupName)) clearGroup(group, slot);
    for (const [groupName, values] of reading.groups) {
      let group = stream.groups.get(groupName);
      if (group === undefined) {
        if (stream.groups.size >= OVERVIEW_GROUPS || this.series + 3 > MAX_SERIES) continue;
        group = { outRate: new Ring(), lag: new Ring(), pending: new Ring(), lastRead: null };
        stream.groups.set(groupName, group);
        this.series += 3;
      }
      group.outRate.values[slot] = rate(values.read, group.lastRead, seconds);
      group.lastRead = values.read;
      group.lag.values[slot] = values.lag ?? Number.NaN;
      group.pending.values[slot] = values.pending;
    }
  }

  private drop(name: string, stream: StreamSeries): void {
    this.streams.delete(name);
    this.series -= 2 + 3 * stream.groups.size;
  }
}

function keysOf(target: StreamTarget): readonly string[] {
  return target.partitions !== undefined && target.partitions.length > 0 ? target.partitions : [target.name];
}

/** A partitioned stream's partitions summed (a counter unknown in one partition is unknown in all). */
function summed(parts: readonly [StreamInfo, GroupInfo[], number][]): StreamReading {
  const add = (a: number | null, b: number | null) => (a === null || b === null ? null : a + b);
  const reading: StreamReading = { added: 0, deadLetters: 0, groups: new Map() };
  for (const [stream, groups, deadLetters] of parts) {
    reading.added = add(reading.added, stream.entriesAdded);
    reading.deadLetters += deadLetters;
    for (const group of groups) {
      const seen = reading.groups.get(group.name);
      if (seen === undefined) reading.groups.set(group.name, { read: group.entriesRead, lag: group.lag, pending: group.pending });
      else reading.groups.set(group.name, { read: add(seen.read, group.entriesRead), lag: add(seen.lag, group.lag), pending: seen.pending + group.pending });
    }
  }
  return reading;
}

/** Per second since the last sample; NaN without one (or when a counter went back: the stream was recreated). */
function rate(now: number | null, before: number | null, seconds: number): number {
  if (now === null || before === null || !(seconds > 0) || now < before) return Number.NaN;
  return (now - before) / seconds;
}

function clear(stream: StreamSeries, slot: number): void {
  stream.inRate.values[slot] = Number.NaN;
  stream.deadLetters.values[slot] = Number.NaN;
  for (const group of stream.groups.values()) clearGroup(group, slot);
}

function clearGroup(group: GroupSeries, slot: number): void {
  group.outRate.values[slot] = Number.NaN;
  group.lag.values[slot] = Number.NaN;
  group.pending.values[slot] = Number.NaN;
  group.lastRead = null;
}
