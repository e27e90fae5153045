import type { CapabilityRequirement } from '../redis/capability-requirements.js';
import { unmetRequirement } from '../redis/capability-requirements.js';
import type { RedisStreamsCapabilities } from '../redis/capabilities.js';
import type { RedisStreamsCapabilityError } from '../errors.js';
import type { ResolvedClientOptions } from './redis-streams-client.options.js';
import { ONLY_ACKED_REQUIREMENT, type CompiledTrimming } from './trimming.js';
import { IDMP_REQUIREMENT, idmpUnsupported, idmpWordOf } from './idempotent-emit.js';

/** What the client's options need from the server: checked at the first connect (and after each reconnect, per emit). */
export function clientRequirements(config: ResolvedClientOptions): CapabilityRequirement[] {
  const needs: CapabilityRequirement[] = [];
  if (config.idempotence !== undefined) needs.push({ option: 'idempotence', ...IDMP_REQUIREMENT });
  if (config.trim.onlyAcked) needs.push({ option: 'trim.onlyAcked', ...ONLY_ACKED_REQUIREMENT });
  for (const [pattern, trimming] of config.trimming) {
    if (trimming.onlyAcked) needs.push({ option: `trimming.${pattern}.onlyAcked`, ...ONLY_ACKED_REQUIREMENT });
  }
  return needs;
}

/**
 * The error of one XADD whose words the server connected now cannot run (IDMP / IDMPAUTO, the
 * ACKED trimming policy): a per-call option, or a failover that landed on an older server.
 * `undefined` when it can, or when nothing is known (then nothing can be sent either).
 */
export function xaddUnsupported(
  args: readonly unknown[],
  trimming: CompiledTrimming,
  capabilities: RedisStreamsCapabilities | undefined,
): RedisStreamsCapabilityError | undefined {
  if (capabilities === undefined) return undefined;
  const idmp = idmpWordOf(args);
  if (idmp !== undefined && !capabilities.idmp) return idmpUnsupported(idmp);
  return trimmingUnsupported(trimming, capabilities, 'trim.onlyAcked');
}

/** The error of one XADD whose trimming the server cannot do; `undefined` when it can. */
export function trimmingUnsupported(
  trimming: CompiledTrimming,
  capabilities: RedisStreamsCapabilities | undefined,
  option: string,
): RedisStreamsCapabilityError | undefined {
  if (!trimming.onlyAcked || capabilities === undefined) return undefined;
  return unmetRequirement(capabilities, [{ option, ...ONLY_ACKED_REQUIREMENT }]);
}
