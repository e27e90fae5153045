import type { Command } from 'commander';
import { StreamInspector } from '../../claim/stream-inspector.js';
import { nonEmptyStringOption } from '../../validation.js';
import { resolveUrl, withRedis } from '../connection.js';
import { addConnectionOption, type CliContext } from '../context.js';
import { printJson } from '../output.js';

interface InfoFlags {
  url?: string;
  group?: string;
}

export function registerInfoCommand(program: Command, { io }: CliContext): void {
  const command = program
    .command('info')
    .description('stream length and first/last ids, its groups (pending, lag), and with --group that group\'s consumers')
    .argument('<key>', 'stream key')
    .option('--group <group>', 'also list the consumers of this group');
  addConnectionOption(command).action(async (key: string, flags: InfoFlags) => {
    nonEmptyStringOption('key', key);
    if (flags.group !== undefined) nonEmptyStringOption('group', flags.group);
    const output = await withRedis(resolveUrl(flags, io), async (redis) => {
      const inspection = new StreamInspector(redis);
      // Sent together: one connection pipelines them.
      const [stream, groups, consumers] = await Promise.all([
        inspection.stream(key),
        inspection.groups(key),
        flags.group === undefined ? undefined : inspection.consumers(key, flags.group),
      ]);
      return consumers === undefined ? { key, stream, groups } : { key, stream, groups, group: flags.group, consumers };
    });
    printJson(io, output);
  });
}
