import type { Command } from 'commander';
import { isNoPermission } from '../../redis/acl-refusal.js';
import type { StreamInspector } from '../../claim/stream-inspector.js';
import type { RedisClient } from '../../redis/connection.js';
import { flagsOf, type CliContext } from '../context.js';
import type { PartitionedInfoOutput } from '../partition-totals.js';
import { printResult } from '../print.js';
import { withCliRedis } from '../redis-session.js';
import { infoView, type InfoOutput } from '../views/info.view.js';

interface InfoFlags {
  group?: string;
}

export function registerInfoCommand(program: Command, { io }: CliContext): void {
  program
    .command('info')
    .description('stream length and first/last ids, its groups (pending, lag, paused), its held delayed entries, and with --group that group\'s consumers; a partitioned stream: each partition and the total')
    .argument('<key>', 'stream key')
    .option('--group <group>', 'also list the consumers of this group')
    .action(async (key: string, _options: unknown, command: Command) => {
      const flags = flagsOf<InfoFlags>(command);
      const { nonEmptyStringOption } = await import('../../validation.js');
      nonEmptyStringOption('key', key);
      if (flags.group !== undefined) nonEmptyStringOption('group', flags.group);
      const { StreamInspector } = await import('../../claim/stream-inspector.js');
      const output = await withCliRedis(io, flags, async (redis): Promise<InfoOutput | PartitionedInfoOutput> => {
        const inspection = new StreamInspector(redis);
        try {
          return await infoOf(redis, inspection, key, flags.group);
        } catch (error) {
          // A partitioned stream has no key of its own; its metadata key records the partition count.
          return (await partitionedInfoOf(redis, inspection, key, flags.group, error)) ?? Promise.reject(error);
        }
      });
      if ('partitions' in output) {
        const { partitionedInfoView } = await import('../views/partitioned-info.view.js');
        printResult(io, flags, output, () => partitionedInfoView(output));
      } else printResult(io, flags, output, () => infoView(output));
    });
}

/** `withPaused`: false for a partition, whose pause state is its partitioned stream's. */
async function infoOf(redis: RedisClient, inspection: StreamInspector, key: string, group: string | undefined, withPaused = true): Promise<InfoOutput> {
  // Sent together: one connection pipelines them.
  const [stream, groups, consumers, delayed, paused] = await Promise.all([
    inspection.stream(key),
    inspection.groups(key),
    group === undefined ? undefined : inspection.consumers(key, group),
    delayedOf(redis, key),
    withPaused ? pausedOf(redis, key) : undefined,
  ]);
  const output: InfoOutput = consumers === undefined ? { key, stream, groups } : { key, stream, groups, group, consumers };
  if (delayed !== undefined) output.delayed = delayed;
  if (paused !== undefined) output.paused = paused;
  return output;
}

/** The groups paused for every worker (`pause`), when some are: the stream's own, or a partitioned stream's for all partitions. */
async function pausedOf(redis: RedisClient, key: string): Promise<InfoOutput['paused']> {
  const { pausedGroupsOrNone } = await import('../paused-groups.js');
  const paused = [...(await pausedGroupsOrNone(redis, key))].map(([group, since]) => ({ group, pausedAt: new Date(since).toISOString() }));
  return paused.length === 0 ? undefined : paused;
}

/**
 * The stream's held delayed entries (docs/scheduling.md), shown only when it holds some; also
 * left out when the ACL refuses the delayed keys (an operator's rules from before them).
 */
async function delayedOf(redis: RedisClient, key: string): Promise<InfoOutput['delayed']> {
  const { countDelayed } = await import('../../delayed/delayed-inspection.js');
  const count = await countDelayed(redis, key).catch((error: unknown) => (isNoPermission(error) ? undefined : Promise.reject(error)));
  if (count === undefined || count.held === 0) return undefined;
  return { held: count.held, due: count.due, nextDueAt: count.nextDueAt };
}

/** `undefined` unless `key` is missing because it is partitioned (then every partition and the totals). */
async function partitionedInfoOf(
  redis: RedisClient,
  inspection: StreamInspector,
  key: string,
  group: string | undefined,
  error: unknown,
): Promise<PartitionedInfoOutput | undefined> {
  const { RedisStreamsClaimError } = await import('../../claim/claim.errors.js');
  if (!(error instanceof RedisStreamsClaimError) || error.reason !== 'missing-stream') return undefined;
  const [{ recordedPartitionCount }, { partitionStreamKeys }, { partitionTotals }] = await Promise.all([
    import('../../partitions/partition-metadata.js'),
    import('../../partitions/partition-keys.js'),
    import('../partition-totals.js'),
  ]);
  const partitionCount = await recordedPartitionCount(redis, key);
  if (partitionCount === 1) return undefined;
  const [partitions, paused] = await Promise.all([
    Promise.all(partitionStreamKeys(key, partitionCount).map((partition) => partitionInfoOf(redis, inspection, partition, group))),
    pausedOf(redis, key),
  ]);
  const output: PartitionedInfoOutput = { key, partitionCount, partitions, total: partitionTotals(partitions, group) };
  if (paused !== undefined) output.paused = paused;
  return output;
}

/**
 * One partition's `info`. A partition no entry reached yet (producers ahead of the workers, which
 * create every partition with their groups) has no key: shown empty and `missing`, with the
 * delayed entries it may already hold, rather than failing the whole command.
 */
async function partitionInfoOf(redis: RedisClient, inspection: StreamInspector, key: string, group: string | undefined): Promise<InfoOutput> {
  try {
    return await infoOf(redis, inspection, key, group, false);
  } catch (error) {
    const { RedisStreamsClaimError } = await import('../../claim/claim.errors.js');
    if (!(error instanceof RedisStreamsClaimError) || error.reason !== 'missing-stream') throw error;
  }
  const stream = { key, length: 0, firstEntryId: null, lastEntryId: null, lastGeneratedId: null, groups: 0, entriesAdded: 0, maxDeletedEntryId: null, recordedFirstEntryId: null };
  const output: InfoOutput = group === undefined ? { key, missing: true, stream, groups: [] } : { key, missing: true, stream, groups: [], group, consumers: [] };
  const delayed = await delayedOf(redis, key);
  if (delayed !== undefined) output.delayed = delayed;
  return output;
}
