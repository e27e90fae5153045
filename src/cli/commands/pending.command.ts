import type { Command } from 'commander';
import type { PendingRangeOptions } from '../../claim/inspection.types.js';
import { integerArgument } from '../arguments.js';
import { flagsOf, type CliContext } from '../context.js';
import { printResult } from '../print.js';
import { withCliRedis } from '../redis-session.js';
import { partitionedPendingSummaryView, pendingEntriesView, pendingSummaryView } from '../views/pending.view.js';

/** The single stream's result, or when its key is a partitioned stream (the claim error names the partitions), `partitioned`'s. */
async function onPartitions<T, U>(single: Promise<T>, partitioned: (partitionKeys: readonly string[]) => Promise<U>): Promise<T | U> {
  try {
    return await single;
  } catch (error) {
    const partitionKeys = (error as { partitionKeys?: readonly string[] }).partitionKeys;
    if (partitionKeys === undefined) throw error;
    return partitioned(partitionKeys);
  }
}

interface PendingFlags {
  entries?: boolean;
  start?: string;
  end?: string;
  count?: string;
  consumer?: string;
  minIdleTime?: string;
  retryConsumer?: string;
}

export function registerPendingCommand(program: Command, { io }: CliContext): void {
  program
    .command('pending')
    .description('pending summary of a group (XPENDING); with --entries, the pending entries themselves')
    .argument('<key>', 'stream key')
    .argument('<group>', 'consumer group')
    .option('--entries', 'list entries (id, consumer, idleMs, deliveryCount) instead of the summary')
    .option('--start <id>', 'with --entries: first id, "-" (default) or "(id" for exclusive')
    .option('--end <id>', 'with --entries: last id, "+" (default)')
    .option('--count <n>', 'with --entries: at most this many, 1..10000 (default 100)')
    .option('--consumer <name>', "with --entries: only this consumer's entries")
    .option('--min-idle-time <duration>', 'with --entries: only entries idle at least this long (ms or ISO-8601)')
    .option(
      '--retry-consumer <name>',
      "with --entries: the servers' recovery.retryConsumer (default retry); its entries, failed and waiting for a retry, show their next retry time and last error",
    )
    .action(async (key: string, group: string, _options: unknown, command: Command) => {
      const flags = flagsOf<PendingFlags>(command);
      const range: PendingRangeOptions = {
        start: flags.start,
        end: flags.end,
        count: integerArgument(flags.count) as number | undefined,
        consumer: flags.consumer,
        minIdleTime: flags.minIdleTime,
        retryConsumer: flags.retryConsumer,
      };
      const { resolvePendingRangeOptions, StreamInspector } = await import('../../claim/stream-inspector.js');
      resolvePendingRangeOptions(key, group, range); // a bad option is reported before connecting
      const { partitionedPendingEntries, partitionedPendingSummary } = await import('../partitioned-pending.js');
      if (!flags.entries) {
        // A partitioned stream has no key of its own: its partitions, and their total.
        const summary = await withCliRedis(io, flags, (redis) =>
          onPartitions(new StreamInspector(redis).pendingSummary(key, group), (keys) => partitionedPendingSummary(new StreamInspector(redis), key, group, keys)),
        );
        if ('partitions' in summary) printResult(io, flags, summary, () => partitionedPendingSummaryView(summary));
        else printResult(io, flags, summary, () => pendingSummaryView(summary));
        return;
      }
      const output = await withCliRedis(io, flags, (redis) =>
        onPartitions(
          new StreamInspector(redis).pendingRange(key, group, range).then((entries) => ({ key, group, entries })),
          (keys) => partitionedPendingEntries(new StreamInspector(redis), key, group, keys, range),
        ),
      );
      printResult(io, flags, output, () => pendingEntriesView(output));
    });
}
