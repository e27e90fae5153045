import type { Command } from 'commander';
import { flagsOf, type CliContext } from '../context.js';
import { printResult } from '../print.js';
import { withCliRedis } from '../redis-session.js';
import { pauseChangeView } from '../views/pause.view.js';

/**
 * `pause <key> <group>` / `resume <key> <group>`: every worker of the group stops (or starts
 * again) reading the stream within one pause poll; the state is kept in Redis (`{<key>}:paused`).
 * Both succeed when there is nothing to change, so a script can run them twice.
 */
export function registerPauseCommands(program: Command, { io }: CliContext): void {
  for (const pause of [true, false]) {
    program
      .command(pause ? 'pause' : 'resume')
      .description(
        pause
          ? 'pause a consumer group for every worker: they stop reading within a second, running handlers finish, nothing is lost (kept in Redis across restarts)'
          : 'resume a paused consumer group: every worker reads it again within a second',
      )
      .argument('<key>', 'stream key (a partitioned stream: its name, for every partition)')
      .argument('<group>', 'consumer group')
      .action(async (key: string, group: string, _options: unknown, command: Command) => {
        const flags = flagsOf(command);
        const [{ nonEmptyStringOption }, { changePause }] = await Promise.all([import('../../validation.js'), import('../pause-change.js')]);
        nonEmptyStringOption('key', key);
        nonEmptyStringOption('group', group);
        const change = await withCliRedis(io, flags, (redis) => changePause(redis, key, group, pause));
        printResult(io, flags, change, () => pauseChangeView(change));
      });
  }
}
