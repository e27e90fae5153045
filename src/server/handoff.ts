import type { RedisClient } from '../redis/connection.js';
import { handOffEntries as handOffOwned } from '../recovery/leases.js';
import type { InFlightEntry } from './in-flight.js';

/**
 * Hands fetched-but-unstarted entries back to the group on close: each entry this consumer still
 * owns moves to the handoff consumer with a huge idle time and JUSTID (one owner-checked script per
 * batch), so any other consumer can claim it at once and its delivery count does not rise. An entry
 * someone else claimed meanwhile stays theirs. Returns how many entries were handed off.
 */
export async function handOffEntries(
  client: RedisClient,
  entries: readonly InFlightEntry[],
  consumer: string,
  handoffConsumer: string,
): Promise<number> {
  const byBinding = new Map<string, { stream: string; group: string; ids: string[] }>();
  for (const entry of entries) {
    const { binding } = entry;
    let batch = byBinding.get(binding.key);
    if (batch === undefined) {
      batch = { stream: binding.stream, group: binding.group, ids: [] };
      byBinding.set(binding.key, batch);
    }
    batch.ids.push(entry.id);
  }
  const results = await Promise.all(
    [...byBinding.values()].map(({ stream, group, ids }) =>
      handOffOwned(client, { stream, group, consumer, handoffConsumer, ids, batchSize: 1_000 }),
    ),
  );
  return results.reduce((sum, result) => sum + result.handedOff.length, 0);
}
