import type { Command } from 'commander';
import { flagsOf, type CliContext } from '../context.js';
import { printResult } from '../print.js';
import { withCliRedis } from '../redis-session.js';

interface CancelFlags {
  reason?: string;
  lanes?: string;
  deadLetterKey?: string;
}

/** `cancel <key> <id>`: an operator's cancel of one entry (docs/lifecycle.md). */
export function registerCancelCommand(program: Command, { io }: CliContext): void {
  program
    .command('cancel')
    .description('cancel one entry: dead-lettered with reason cancelled (never lost), taken out of its hold, the stream and every pending list; a worker running it is told at its next lease renewal')
    .argument('<key>', "stream key (of a partitioned stream, its partitions are searched; with --lanes, its priority lanes')")
    .argument('<id>', 'entry id, or the hold id a delayed emit returned')
    .option('--reason <text>', 'why: kept as the dead letter\'s error and given to a running handler (default "cancelled by an operator")')
    .option('--lanes <names>', "the stream's priority lanes, comma-separated (the handler's extras.priorities)")
    .option('--dead-letter-key <template>', "the servers' recovery.deadLetterKey as a template, %s for the stream key (default {%s}:dead)")
    .action(async (key: string, id: string, _options: unknown, command: Command) => {
      const flags = flagsOf<CancelFlags>(command);
      const { cancelEntry } = await import('../../lifecycle/cancel.js');
      const { entryStreamsOf } = await import('../../lifecycle/entry-streams.js');
      const outcome = await withCliRedis(io, flags, async (redis) =>
        cancelEntry(redis, await entryStreamsOf(redis, key, flags.lanes), id, flags.reason, { deadLetterKey: flags.deadLetterKey }),
      );
      printResult(io, flags, outcome, () =>
        outcome.cancelled
          ? `cancelled entry ${outcome.id} of ${outcome.stream} (was ${outcome.previous}${outcome.key !== outcome.stream ? ` in ${outcome.key}` : ''}): dead letter ${outcome.deadLetter?.id} in ${outcome.deadLetter?.key}\n`
          : `entry ${outcome.id} of ${outcome.stream} is ${outcome.previous}: nothing to cancel\n`,
      );
    });
}
