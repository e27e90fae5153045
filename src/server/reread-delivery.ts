import { errorMessage } from '../error-message.js';
import type { StreamBinding } from './in-flight.js';
import type { ReadEntry } from './read-reply.js';
import type { ReaderHost } from './reader-host.js';

/**
 * One page of a re-read of this consumer's own pending entries (id `0`, then after the last id
 * seen): deleted entries are acked away, the live ones delivered with the delivery counts XPENDING
 * reports (Redis raised them by one with this re-read).
 */
export async function deliverReRead(host: ReaderHost, binding: StreamBinding, entries: ReadEntry[], reReadAt: number): Promise<void> {
  const deleted = entries.filter((entry) => entry.flat === null).map((entry) => entry.id);
  if (deleted.length > 0) host.dropDeleted(binding, deleted);
  const live = entries.filter((entry) => entry.flat !== null);
  if (live.length === 0) return;
  let counts: Map<string, number> | undefined = new Map<string, number>();
  try {
    const first = (live[0] as ReadEntry).id;
    const last = (live[live.length - 1] as ReadEntry).id;
    const rows = (await host.commands.call(
      'XPENDING', binding.stream, binding.group, first, last, live.length, host.consumer,
    )) as Array<[string, string, number, number]>;
    for (const row of rows) counts.set(String(row[0]), Number(row[3]));
  } catch (error) {
    counts = undefined;
    host.logger.warn(`XPENDING on "${binding.stream}" failed; re-read entries get delivery count 2: ${errorMessage(error)}`);
  }
  // An entry no longer pending for us was settled meanwhile (e.g. recovery claimed it into our
  // pending list, the handler ran and acked it before this re-read's reply was processed). One
  // this process holds (recovery claimed it while the re-read waited for slots) is running or
  // queued already: this re-read raised its count but is no new delivery — never dead-letter it.
  const { slots } = host;
  const stillOurs = live.filter((entry) => (counts === undefined || counts.has(entry.id)) && !slots.has(binding, entry.id));
  host.deliver(
    binding,
    stillOurs.map((entry) => ({ id: entry.id, flat: entry.flat as (string | Buffer)[], deliveryCount: counts?.get(entry.id) ?? 2 })),
    reReadAt,
  );
}
