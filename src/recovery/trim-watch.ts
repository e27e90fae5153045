import { compareStreamIds } from '../stream-ids.js';
import type { StreamInspector } from '../claim/stream-inspector.js';
import type { EntriesLostNotice } from './recovery-events.js';

/**
 * Detects entries trimmed before a group ever read them (reliability anchors F7, P9): such
 * entries leave no trace in the pending list, only a group whose last-delivered id is behind the
 * stream's recorded first entry; Redis 7.0+ tells how many: `entries-added - entries-read -
 * length` (not `lag - length`: since 8.0 `lag` is capped at the length). When Redis cannot tell
 * (6.2, or `entries-read` unknown) a last-delivered id behind the first entry is reported with
 * count 0. Each distinct finding is
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
    const { lastDeliveredId, lag, entriesRead } = group;
    const { firstEntryId, entriesAdded, recordedFirstEntryId, length } = info;
    let count: number;
    if (entriesRead !== null && entriesAdded !== null && recordedFirstEntryId !== null) {
      // Redis 7.0+: entries the group never read that are no longer in the stream. Not from `lag`:
      // since Redis 8.0 it is capped at the stream length, so `lag - length` is never above 0.
      if (compareStreamIds(lastDeliveredId, recordedFirstEntryId) >= 0) return undefined;
      count = entriesAdded - entriesRead - length;
      if (count <= 0) return undefined;
    } else if (lag !== null) {
      count = lag - length;
      if (count <= 0) return undefined;
    } else {
      // Redis 6.2 (no counters), or Redis cannot tell: only whether the group is behind the stream.
      const behind = firstEntryId !== null && lastDeliveredId !== '0-0' && compareStreamIds(lastDeliveredId, firstEntryId) < 0;
      if (!behind) return undefined;
      count = 0; // unknown how many
    }
    const finding = `${lastDeliveredId}|${firstEntryId}|${count}`;
    if (finding === this.lastReported) return undefined;
    this.lastReported = finding;
    return { stream: this.stream, group: this.group, reason: 'trimmed_undelivered', count, ids: [], lastDeliveredId, firstEntryId };
  }
}

