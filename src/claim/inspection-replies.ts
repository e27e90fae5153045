import type { ConsumerInfo, GroupInfo, PendingEntry, PendingSummary, StreamInfo } from './inspection.types.js';
import { asNumber, asRecord, asRecordList, asText, entryId, optionalNumber, requiredNumber } from './reply-shapes.js';

/** `[count, smallest, largest, [[consumer, "n"], ...]]`; the list may also come as a map. */
export function parsePendingSummary(key: string, group: string, reply: unknown): PendingSummary {
  const [count, smallest, largest, consumers] = Array.isArray(reply) ? (reply as unknown[]) : [];
  return {
    key,
    group,
    count: asNumber(count) ?? 0,
    smallest: asText(smallest),
    largest: asText(largest),
    consumers: [...asRecord(consumers ?? [])].map(([name, pending]) => ({ name, pending: asNumber(pending) ?? 0 })),
  };
}

/** `[[id, consumer, idle-ms, deliveries], ...]`. */
export function parsePendingEntries(reply: unknown): PendingEntry[] {
  if (!Array.isArray(reply)) return [];
  const entries: PendingEntry[] = [];
  for (const row of reply as unknown[]) {
    if (!Array.isArray(row)) continue;
    const id = asText(row[0]);
    if (id === null) continue;
    entries.push({
      id,
      consumer: asText(row[1]) ?? '',
      idleMs: asNumber(row[2]) ?? 0,
      deliveryCount: asNumber(row[3]) ?? 0,
    });
  }
  return entries;
}

export function parseGroups(reply: unknown): GroupInfo[] {
  return asRecordList(reply).map((group) => ({
    name: asText(group.get('name')) ?? '',
    consumers: requiredNumber(group, 'consumers'),
    pending: requiredNumber(group, 'pending'),
    lastDeliveredId: asText(group.get('last-delivered-id')) ?? '0-0',
    entriesRead: optionalNumber(group, 'entries-read'),
    lag: optionalNumber(group, 'lag'),
  }));
}

export function parseConsumers(reply: unknown): ConsumerInfo[] {
  return asRecordList(reply).map((consumer) => ({
    name: asText(consumer.get('name')) ?? '',
    pending: requiredNumber(consumer, 'pending'),
    idleMs: requiredNumber(consumer, 'idle'),
    inactiveMs: optionalNumber(consumer, 'inactive'),
  }));
}

export function parseStreamInfo(key: string, reply: unknown): StreamInfo {
  const info = asRecord(reply);
  return {
    key,
    length: requiredNumber(info, 'length'),
    firstEntryId: entryId(info.get('first-entry')),
    lastEntryId: entryId(info.get('last-entry')),
    lastGeneratedId: asText(info.get('last-generated-id')),
    groups: requiredNumber(info, 'groups'),
    entriesAdded: optionalNumber(info, 'entries-added'),
    maxDeletedEntryId: asText(info.get('max-deleted-entry-id')),
    recordedFirstEntryId: asText(info.get('recorded-first-entry-id')),
  };
}
