import type { RedisClient } from '../redis/connection.js';
import { integerOption, nonEmptyStringOption } from '../validation.js';
import { batchSizeOption, streamIdListOption } from './recovery-validation.js';
import { batches, recoveryScripts } from './scripts/loader.js';

/**
 * Owner-checked re-claims of pending entries (atomicity A4 and A10), both with JUSTID so the Redis
 * delivery count is not raised. Neither ever takes an entry that another consumer holds now.
 */

export interface LeaseRequest {
  stream: string;
  group: string;
  /** The consumer that must hold the entries (this worker). */
  consumer: string;
  /** Pending ids this worker believes it holds. */
  ids: readonly string[];
  /** Ids per script call, 1..1000. Default 100. */
  batchSize?: number;
}

/** Why an id was not renewed or handed off. */
export type LostLeaseReason =
  /** Another consumer claimed it (our lease lapsed): stop working on it, do not ack twice. */
  | 'not_owner'
  /** No longer pending: acked, dead-lettered, or the group was recreated. */
  | 'not_pending'
  /** Its entry was trimmed or deleted from the stream; Redis dropped the pending ref. */
  | 'deleted';

export interface LostLease {
  id: string;
  reason: LostLeaseReason;
  /** The consumer holding it now (`not_owner` only), otherwise `null`. */
  owner: string | null;
}

export interface LeaseRenewal {
  /** Ids whose idle time was reset to 0 (still ours). */
  renewed: string[];
  /** Ids we no longer hold. */
  lost: LostLease[];
}

export interface HandOffRequest extends LeaseRequest {
  /** Consumer that receives the entries. */
  handoffConsumer: string;
  /**
   * Idle time the handed-off entries get, in ms. Default 10^12 (~31 years): any claimer with a
   * realistic `minIdleTime` takes them on its next run.
   */
  idleMs?: number;
}

export interface HandOffResult {
  /** Ids now pending for `handoffConsumer`. */
  handedOff: string[];
  lost: LostLease[];
}

export const DEFAULT_HANDOFF_IDLE_MS = 1_000_000_000_000;

/**
 * Lease renewal for in-flight entries: for each id still owned by `consumer`, reset its idle time
 * (`XCLAIM stream group consumer 0 id JUSTID`) so recoverers with `minIdleTime` leave it alone.
 * Ids held by someone else are reported lost and never taken back.
 */
export async function renewLeases(client: RedisClient, request: LeaseRequest): Promise<LeaseRenewal> {
  const { stream, group, consumer, ids, batchSize } = validateLease(request);
  const { claimed, lost } = await claimIfOwned(client, stream, group, consumer, consumer, 0, ids, batchSize);
  return { renewed: claimed, lost };
}

/**
 * Shutdown handoff of fetched-but-unstarted entries: move each id still owned by `consumer` to
 * `handoffConsumer` with a huge idle time (JUSTID), so another worker claims it at once. Do not
 * hand off entries whose handler is running.
 */
export async function handOffEntries(client: RedisClient, request: HandOffRequest): Promise<HandOffResult> {
  const { stream, group, consumer, ids, batchSize } = validateLease(request);
  const handoffConsumer = nonEmptyStringOption('handoffConsumer', request.handoffConsumer);
  const idleMs = integerOption('idleMs', request.idleMs, DEFAULT_HANDOFF_IDLE_MS, 0);
  const { claimed, lost } = await claimIfOwned(client, stream, group, consumer, handoffConsumer, idleMs, ids, batchSize);
  return { handedOff: claimed, lost };
}

function validateLease(request: LeaseRequest) {
  return {
    stream: nonEmptyStringOption('stream', request.stream),
    group: nonEmptyStringOption('group', request.group),
    consumer: nonEmptyStringOption('consumer', request.consumer),
    ids: streamIdListOption('ids', request.ids),
    batchSize: batchSizeOption('batchSize', request.batchSize),
  };
}

async function claimIfOwned(
  client: RedisClient,
  stream: string,
  group: string,
  owner: string,
  target: string,
  idleMs: number,
  ids: readonly string[],
  batchSize: number,
): Promise<{ claimed: string[]; lost: LostLease[] }> {
  const scripts = recoveryScripts(client);
  const claimed: string[] = [];
  const lost: LostLease[] = [];
  for (const batch of batches(ids, batchSize)) {
    const rows = await scripts.nrsClaimIfOwned(stream, group, owner, target, idleMs, batch.length, ...batch);
    for (const row of rows) {
      const [id, status, current] = row.map(String) as [string, string, string];
      if (status === 'claimed') claimed.push(id);
      else if (status === 'not_owner' || status === 'not_pending' || status === 'deleted') {
        lost.push({ id, reason: status, owner: status === 'not_owner' ? current : null });
      } else {
        throw new Error(`claim-if-owned script returned an unknown status "${status}" for ${id}`);
      }
    }
  }
  return { claimed, lost };
}
