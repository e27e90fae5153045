import type { RedisClient } from '../redis/connection.js';
import { batches, MAX_SCRIPT_BATCH, recoveryScripts } from './scripts/loader.js';

export interface IdleEntry {
  id: string;
  /** The delivery count it keeps (`RETRYCOUNT`: a handed-off entry); without it the count rises by one. */
  keepCount?: number;
}

export type IdleClaimStatus = 'not_pending' | 'not_due' | 'deleted';

export interface IdleClaimResult {
  /** Entries now held by `consumer`, with `[f1, v1, …]` as Buffers. */
  claimed: { id: string; flat: Buffer[] }[];
  /**
   * Ids not claimed, and why: `not_pending` (acked meanwhile, by whoever), `not_due` (claimed or
   * renewed meanwhile), `deleted` (pending in the group while its entry is gone from the stream:
   * the only ones lost).
   */
  skipped: { id: string; status: IdleClaimStatus }[];
}

/**
 * Claims entries idle ≥ `minIdleTime` for `consumer` (claim-idle.lua): the PEL is read in the same
 * step as the XCLAIM, so an entry another worker acked and deleted (work-queue mode's XACKDEL)
 * between recovery's XPENDING and this claim is told apart from one deleted while pending.
 */
export async function claimIdleEntries(
  client: RedisClient,
  request: { stream: string; group: string; consumer: string; minIdleTime: number; entries: readonly IdleEntry[] },
): Promise<IdleClaimResult> {
  const { stream, group, consumer, minIdleTime } = request;
  const scripts = recoveryScripts(client);
  const result: IdleClaimResult = { claimed: [], skipped: [] };
  for (const batch of batches(request.entries, MAX_SCRIPT_BATCH)) {
    const args: (string | number)[] = [group, consumer, minIdleTime, batch.length];
    for (const entry of batch) args.push(entry.id, entry.keepCount ?? '');
    // Buffers: a handler with `extras.raw: 'buffers'` gets the exact bytes; the server decodes them for the others.
    const rows = await scripts.nrsClaimIdleBuffer(stream, ...args);
    for (const [idBytes, statusBytes, fields] of rows as [Buffer, Buffer, Buffer[] | Buffer][]) {
      const id = idBytes.toString();
      const status = statusBytes.toString();
      if (status === 'claimed' && Array.isArray(fields)) result.claimed.push({ id, flat: fields });
      else if (status === 'not_pending' || status === 'not_due' || status === 'deleted') result.skipped.push({ id, status });
      else throw new Error(`claim-idle script returned an unknown status "${status}" for ${id}`);
    }
  }
  return result;
}
