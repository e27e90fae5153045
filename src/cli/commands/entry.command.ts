import type { Command } from 'commander';
import { integerArgument } from '../arguments.js';
import { flagsOf, type CliContext } from '../context.js';
import { printResult } from '../print.js';
import { withCliRedis } from '../redis-session.js';
import { entryStatusView } from '../views/entry.view.js';

interface EntryFlags {
  group?: string;
  lanes?: string;
  deadLetterKey?: string;
  leaseWindow?: string;
  retryConsumer?: string;
  deadLetterScan?: string;
}

/** `entry <key> <id>`: what became of one entry (docs/lifecycle.md), per consumer group. */
export function registerEntryCommand(program: Command, { io }: CliContext): void {
  program
    .command('entry')
    .description('what became of one entry: held, waiting, pending, running, done, dead-lettered or gone, per consumer group')
    .argument('<key>', "stream key (of a partitioned stream, its partitions are searched; with --lanes, its priority lanes')")
    .argument('<id>', 'entry id, or the hold id a delayed emit returned')
    .option('--group <name>', 'only this consumer group (default: every group)')
    .option('--lanes <names>', "the stream's priority lanes, comma-separated (the handler's extras.priorities): each lane's stream is searched")
    .option('--dead-letter-key <template>', "the servers' recovery.deadLetterKey as a template, %s for the stream key (default {%s}:dead)")
    .option('--lease-window <duration>', 'a pending entry idle less than this is running (ms or ISO-8601; default 30000, the default minIdleTime)')
    .option('--retry-consumer <name>', "the servers' recovery.retryConsumer (default retry): entries waiting there for a retry are pending, not running")
    .option('--dead-letter-scan <n>', 'read at most this many dead letters looking for the entry (default 10000)')
    .action(async (key: string, id: string, _options: unknown, command: Command) => {
      const flags = flagsOf<EntryFlags>(command);
      const options = {
        group: flags.group,
        leaseWindow: flags.leaseWindow,
        retryConsumer: flags.retryConsumer,
        deadLetterKey: flags.deadLetterKey,
        deadLetterScan: integerArgument(flags.deadLetterScan) as number | undefined,
      };
      const { entryStatus } = await import('../../lifecycle/entry-status.js');
      const { entryStreamsOf } = await import('../../lifecycle/entry-streams.js');
      const status = await withCliRedis(io, flags, async (redis) => entryStatus(redis, await entryStreamsOf(redis, key, flags.lanes), id, options));
      printResult(io, flags, status, () => entryStatusView(status));
    });
}
