import { RedisStreamsCapabilityError } from '../errors.js';
import type { RedisStreamsCapabilities } from './capabilities.js';

type Capability = Exclude<keyof RedisStreamsCapabilities, 'missingCommands' | 'unprobed'>;

/** An option that is set and needs a server feature (checked against the probe, never the version string). */
export interface CapabilityRequirement {
  /** The option as the user wrote it, e.g. `trim.onlyAcked` or `trimming.orders.onlyAcked`. */
  readonly option: string;
  readonly capability: Capability;
  /** The first Redis version that has it (for the message). */
  readonly since: string;
  /** What the option sends, e.g. `XADD … ACKED`. */
  readonly feature: string;
}

/** The first requirement the server does not meet, as the error naming the option and the capability. */
export function unmetRequirement(
  capabilities: RedisStreamsCapabilities,
  requirements: readonly CapabilityRequirement[],
): RedisStreamsCapabilityError | undefined {
  const unmet = requirements.find((requirement) => !capabilities[requirement.capability]);
  return unmet === undefined ? undefined : new RedisStreamsCapabilityError(unmet.option, unmet.capability, unmet.since, unmet.feature);
}

/** Throws when the server lacks what a set option needs. */
export function requireCapabilities(capabilities: RedisStreamsCapabilities, requirements: readonly CapabilityRequirement[]): void {
  const error = unmetRequirement(capabilities, requirements);
  if (error !== undefined) throw error;
}
