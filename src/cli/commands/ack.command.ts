import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { parseIdList } from '../arguments.js';
import { flagsOf, type CliContext } from '../context.js';
import { CliError } from '../errors.js';
import type { CliIo } from '../io.js';
import { printJson } from '../output.js';
import { withCliRedis } from '../redis-session.js';

interface AckFlags {
  idsFrom?: string;
}

export function registerAckCommand(program: Command, { io }: CliContext): void {
  program
    .command('ack')
    .description('acknowledge entries (XACK) and print how many were pending')
    .argument('<key>', 'stream key')
    .argument('<group>', 'consumer group')
    .argument('[ids...]', 'stream ids to acknowledge')
    .option('--ids-from <file>', 'also read ids from a file ("-" for stdin): a claim result JSON, a JSON array, or ids separated by whitespace')
    .action(async (key: string, group: string, ids: string[], _options: unknown, command: Command) => {
      const flags = flagsOf<AckFlags>(command);
      const { StreamClaimer, validateAckArguments } = await import('../../claim/stream-claimer.js');
      const all = [...ids, ...(flags.idsFrom === undefined ? [] : await readIds(flags.idsFrom, io))];
      validateAckArguments(key, group, all);
      const acknowledged = await withCliRedis(io, flags, (redis) => new StreamClaimer(redis).ack(key, group, all));
      printJson(io, { key, group, requested: all.length, acknowledged });
    });
}

async function readIds(source: string, io: CliIo): Promise<string[]> {
  try {
    return parseIdList(source === '-' ? await io.readStdin() : await readFile(source, 'utf8'));
  } catch (error) {
    throw new CliError(`invalid --ids-from: ${(error as Error).message}`, 2);
  }
}
