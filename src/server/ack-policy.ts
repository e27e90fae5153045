import type { CapabilityRequirement } from '../redis/capability-requirements.js';
import type { StreamBinding } from './in-flight.js';
import type { ResolvedServerOptions } from './options.js';

/** The XACKDEL policy word of a binding in work-queue mode. */
export type AckDeletePolicy = 'KEEPREF' | 'ACKED';

/** What the server's options need from the Redis server: checked at `listen()`, before any group is created. */
export function serverRequirements(options: ResolvedServerOptions): CapabilityRequirement[] {
  return options.workQueue === undefined ? [] : [{ option: 'workQueue', capability: 'xackdel', since: '8.2', feature: 'XACKDEL' }];
}

/**
 * Each binding's XACKDEL policy in work-queue mode (none when it is off). Without a policy given,
 * KEEPREF, except on a stream that several groups of this server read: KEEPREF there would delete
 * an entry another group has not handled yet, so ACKED.
 */
export function ackDeletePolicies(
  bindings: readonly StreamBinding[],
  workQueue: ResolvedServerOptions['workQueue'],
): ReadonlyMap<StreamBinding, AckDeletePolicy> {
  const policies = new Map<StreamBinding, AckDeletePolicy>();
  if (workQueue === undefined) return policies;
  const groupsPerStream = new Map<string, number>();
  for (const binding of bindings) groupsPerStream.set(binding.stream, (groupsPerStream.get(binding.stream) ?? 0) + 1);
  for (const binding of bindings) {
    const shared = (groupsPerStream.get(binding.stream) ?? 0) > 1;
    const policy = workQueue.policy ?? (shared ? 'acked' : 'keepref');
    policies.set(binding, policy === 'acked' ? 'ACKED' : 'KEEPREF');
  }
  return policies;
}
