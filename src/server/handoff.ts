import type { RedisClient } from '../redis/connection.js';
import type { InFlightEntry } from './in-flight.js';

/** Idle time the handed-back entries get: any XAUTOCLAIM / XCLAIM min-idle is met at once. */
export const HANDOFF_IDLE_MS = 2 ** 31;
const IDS_PER_COMMAND = 500;

/**
 * Hands fetched-but-unstarted entries back to the group: XCLAIM to the handoff consumer with a
 * huge IDLE and JUSTID, so any other consumer can claim them at once and their delivery count
 * does not rise (JUSTID). Returns how many entries Redis moved.
 */
export async function handOffEntries(
  client: RedisClient,
  entries: readonly InFlightEntry[],
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
  const commands: Array<Promise<unknown>> = [];
  for (const { stream, group, ids } of byBinding.values()) {
    for (let i = 0; i < ids.length; i += IDS_PER_COMMAND) {
      const chunk = ids.slice(i, i + IDS_PER_COMMAND);
      commands.push(client.call('XCLAIM', stream, group, handoffConsumer, '0', ...chunk, 'IDLE', String(HANDOFF_IDLE_MS), 'JUSTID'));
    }
  }
  const replies = await Promise.all(commands);
  return replies.reduce<number>((sum, reply) => sum + (Array.isArray(reply) ? reply.length : 0), 0);
}
