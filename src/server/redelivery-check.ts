import type { RedisClient } from '../redis/connection.js';

/**
 * The delivery count of `id` if it is pending for `consumer` in the group, else undefined (acked
 * by the ack that was under way, or someone else's now). One XPENDING, on a rare path only: a
 * delivery that arrived while its twin's ack was in flight (see `InFlightEntry.redelivery`).
 */
export async function pendingDeliveriesOf(client: RedisClient, stream: string, group: string, id: string, consumer: string): Promise<number | undefined> {
  const rows = (await client.xpending(stream, group, id, id, 1, consumer)) as unknown[][];
  const row = rows[0];
  return row === undefined || String(row[0]) !== id ? undefined : Number(row[3]);
}
