import type { Command } from 'commander';
import { resolvePendingRangeOptions, StreamInspector } from '../../claim/stream-inspector.js';
import type { PendingRangeOptions } from '../../claim/inspection.types.js';
import { integerArgument } from '../arguments.js';
import { resolveUrl, withRedis } from '../connection.js';
import { addConnectionOption, type CliContext } from '../context.js';
import { printJson } from '../output.js';

interface PendingFlags {
  url?: string;
  entries?: boolean;
  start?: string;
  end?: string;
  count?: string;
  consumer?: string;
  minIdleTime?: string;
}

export function registerPendingCommand(program: Command, { io }: CliContext): void {
  const command = program
    .command('pending')
    .description('pending summary of a group (XPENDING); with --entries, the pending entries themselves')
    .argument('<key>', 'stream key')
    .argument('<group>', 'consumer group')
    .option('--entries', 'list entries (id, consumer, idleMs, deliveryCount) instead of the summary')
    .option('--start <id>', 'with --entries: first id, "-" (default) or "(id" for exclusive')
    .option('--end <id>', 'with --entries: last id, "+" (default)')
    .option('--count <n>', 'with --entries: at most this many, 1..10000 (default 100)')
    .option('--consumer <name>', "with --entries: only this consumer's entries")
    .option('--min-idle-time <duration>', 'with --entries: only entries idle at least this long (ms or ISO-8601)');
  addConnectionOption(command).action(async (key: string, group: string, flags: PendingFlags) => {
    const range: PendingRangeOptions = {
      start: flags.start,
      end: flags.end,
      count: integerArgument(flags.count) as number | undefined,
      consumer: flags.consumer,
      minIdleTime: flags.minIdleTime,
    };
    resolvePendingRangeOptions(key, group, range); // a bad option is reported before connecting
    const output = await withRedis(resolveUrl(flags, io), async (redis) => {
      const inspection = new StreamInspector(redis);
      if (!flags.entries) return inspection.pendingSummary(key, group);
      return { key, group, entries: await inspection.pendingRange(key, group, range) };
    });
    printJson(io, output);
  });
}
