import type { Command } from 'commander';
import { integerArgument } from '../arguments.js';
import { flagsOf, type CliContext } from '../context.js';
import { printJson } from '../output.js';
import { printResult } from '../print.js';
import { withCliRedis } from '../redis-session.js';
import { delayedCountView, delayedPageView } from '../views/delayed.view.js';

interface ListFlags {
  offset?: string;
  count?: string;
}

/** `delayed count | list | promote | remove`: the held delayed entries of a stream (docs/scheduling.md). */
export function registerDelayedCommand(program: Command, { io }: CliContext): void {
  const delayed = program
    .command('delayed')
    .description('delayed entries held for a stream ({<key>}:delayed): count, list, promote now, remove');

  delayed
    .command('count')
    .description('how many entries are held, how many of them are due and not promoted yet (no worker promoted them), and the next due time')
    .argument('<key>', 'stream key')
    .action(async (key: string, _options: unknown, command: Command) => {
      const flags = flagsOf(command);
      const { countDelayed } = await import('../../delayed/delayed-inspection.js');
      const count = await withCliRedis(io, flags, (redis) => countDelayed(redis, key));
      printResult(io, flags, count, () => delayedCountView(count));
    });

  delayed
    .command('list')
    .description('print one page of held entries, soonest due first (nextOffset continues)')
    .argument('<key>', 'stream key')
    .option('--offset <n>', 'skip this many, in due order (default 0; a page\'s nextOffset)')
    .option('--count <n>', 'at most this many, 1..10000 (default 100)')
    .action(async (key: string, _options: unknown, command: Command) => {
      const flags = flagsOf<ListFlags>(command);
      const options = { offset: integerArgument(flags.offset), count: integerArgument(flags.count) };
      const { listDelayed } = await import('../../delayed/delayed-inspection.js');
      const page = await withCliRedis(io, flags, (redis) => listDelayed(redis, key, options));
      printResult(io, flags, page, () => delayedPageView(page));
    });

  delayed
    .command('promote')
    .description('add held entries to the stream now: the given hold ids whatever their due time, else every due one (each once, even while workers promote)')
    .argument('<key>', 'stream key')
    .argument('[holds...]', 'hold ids (as the delayed emit returned them)')
    .action(async (key: string, holds: string[], _options: unknown, command: Command) => {
      const flags = flagsOf(command);
      const { promoteDelayedNow } = await import('../../delayed/delayed-inspection.js');
      printJson(io, await withCliRedis(io, flags, (redis) => promoteDelayedNow(redis, key, holds)));
    });

  delayed
    .command('remove')
    .description('delete held entries for good: they are never added to the stream')
    .argument('<key>', 'stream key')
    .argument('<holds...>', 'hold ids')
    .action(async (key: string, holds: string[], _options: unknown, command: Command) => {
      const flags = flagsOf(command);
      const { removeDelayed } = await import('../../delayed/delayed-inspection.js');
      printJson(io, await withCliRedis(io, flags, (redis) => removeDelayed(redis, key, holds)));
    });
}
