import type { StreamInspector } from '../claim/stream-inspector.js';
import type { EntriesLostNotice } from './recovery-events.js';

/**
 * Detects entries trimmed before a group ever read them (reliability anchors F7, P9): such
 * entries leave no trace in the pending list, only a group whose lag exceeds what the stream
 * still holds (XINFO GROUPS `lag` > XINFO STREAM `length`, Redis 7.0+), or — when Redis cannot
 * tell the lag — a last-delivered id behind the stream's first entry. Each distinct finding is
 * reported once, not on every check.
 */
export class TrimWatch {
  private lastReported: string | undefined;

  constructor(
    private readonly stream: string,
    private readonly group: string,
    private readonly inspector: StreamInspector,
  ) {}

  /** Returns a notice when entries were lost since the last report, otherwise `undefined`. */
  async check(): Promise<EntriesLostNotice | undefined> {
    const groups = await this.inspector.groups(this.stream);
    const group = groups.find((candidate) => candidate.name === this.group);
    if (group === undefined) return undefined;
    const info = await this.inspector.stream(this.stream);
    const { lastDeliveredId, lag } = group;
    const firstEntryId = info.firstEntryId;
    let count: number;
    if (lag !== null) {
      count = lag - info.length;
      if (count <= 0) return undefined;
    } else {
      const behind = firstEntryId !== null && lastDeliveredId !== '0-0' && compareIds(lastDeliveredId, firstEntryId) < 0;
      if (!behind) return undefined;
      count = 0; // unknown how many
    }
    const finding = `${lastDeliveredId}|${firstEntryId}|${count}`;
    if (finding === this.lastReported) return undefined;
    this.lastReported = finding;
    return { stream: this.stream, group: this.group, reason: 'trimmed_undelivered', count, ids: [], lastDeliveredId, firstEntryId };
  }
}

/** Orders two stream ids (`ms-seq`). */
export function compareIds(a: string, b: string): number {
  const [am = '0', as = '0'] = a.split('-');
  const [bm = '0', bs = '0'] = b.split('-');
  const ms = BigInt(am) - BigInt(bm);
  if (ms !== 0n) return ms < 0n ? -1 : 1;
  const seq = BigInt(as) - BigInt(bs);
  return seq === 0n ? 0 : seq < 0n ? -1 : 1;
}
