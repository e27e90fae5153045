import type { Command } from 'commander';
import { flagsOf, type CliContext } from '../context.js';
import { printResult } from '../print.js';
import { withCliRedis } from '../redis-session.js';
import { infoView, type InfoOutput } from '../views/info.view.js';

interface InfoFlags {
  group?: string;
}

export function registerInfoCommand(program: Command, { io }: CliContext): void {
  program
    .command('info')
    .description('stream length and first/last ids, its groups (pending, lag), and with --group that group\'s consumers')
    .argument('<key>', 'stream key')
    .option('--group <group>', 'also list the consumers of this group')
    .action(async (key: string, _options: unknown, command: Command) => {
      const flags = flagsOf<InfoFlags>(command);
      const { nonEmptyStringOption } = await import('../../validation.js');
      nonEmptyStringOption('key', key);
      if (flags.group !== undefined) nonEmptyStringOption('group', flags.group);
      const { StreamInspector } = await import('../../claim/stream-inspector.js');
      const output = await withCliRedis(io, flags, async (redis): Promise<InfoOutput> => {
        const inspection = new StreamInspector(redis);
        // Sent together: one connection pipelines them.
        const [stream, groups, consumers] = await Promise.all([
          inspection.stream(key),
          inspection.groups(key),
          flags.group === undefined ? undefined : inspection.consumers(key, flags.group),
        ]);
        return consumers === undefined ? { key, stream, groups } : { key, stream, groups, group: flags.group, consumers };
      });
      printResult(io, flags, output, () => infoView(output));
    });
}
