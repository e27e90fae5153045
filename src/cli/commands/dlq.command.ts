import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { FieldEncoding, FieldsFormat } from '../../claim/claim.types.js';
import type { DeadLetterSelection } from '../../recovery/dead-letter.service.js';
import type { RedisClient } from '../../redis/connection.js';
import { integerArgument, parseIdList } from '../arguments.js';
import { flagsOf, type CliContext } from '../context.js';
import { CliError } from '../errors.js';
import type { CliIo } from '../io.js';
import { printJson } from '../output.js';
import { printResult } from '../print.js';
import { withCliRedis } from '../redis-session.js';
import { deadLetterPageView } from '../views/dlq-list.view.js';

interface DlqFlags {
  deadLetterKey?: string;
}

interface FieldsFlags extends DlqFlags {
  fieldsFormat?: string;
  encoding?: string;
}

interface ListFlags extends FieldsFlags {
  start?: string;
  end?: string;
  count?: string;
}

interface SelectionFlags extends DlqFlags {
  all?: boolean;
  idsFrom?: string;
}

/**
 * `dlq list | inspect | redrive | purge`: the DeadLetterService on the command line. The service is a Nest
 * provider, so these commands (and only these) load @nestjs/common, when they run.
 */
export function registerDlqCommand(program: Command, { io }: CliContext): void {
  const dlq = program
    .command('dlq')
    .description("dead letters of a stream (default key {<key>}:dead): list, inspect, redrive back to the stream, purge");

  addFieldsOptions(
    dlq
      .command('list')
      .description('print one page of dead letters, oldest first (nextStart continues)')
      .argument('<key>', 'source stream key')
      .option('--start <id>', 'first id, "-" (default) or "(id" for exclusive (a page\'s nextStart)')
      .option('--end <id>', 'last id, "+" (default)')
      .option('--count <n>', 'at most this many, 1..10000 (default 100)'),
  ).action(async (key: string, _options: unknown, command: Command) => {
    const flags = flagsOf<ListFlags>(command);
    const options = {
      deadLetterKey: await deadLetterKeyOf(flags),
      start: flags.start,
      end: flags.end,
      count: integerArgument(flags.count) as number | undefined,
      ...(await fieldsOptions(flags)),
    };
    const { DeadLetterService, resolveListOptions } = await import('../../recovery/dead-letter.service.js');
    await validateKey(key, flags);
    resolveListOptions(options); // a bad option is reported before connecting
    const page = await withCliRedis(io, flags, (redis) => serviceOf(DeadLetterService, redis, flags).list(key, options));
    printResult(io, flags, page, () => deadLetterPageView(key, page));
  });

  addFieldsOptions(
    dlq
      .command('inspect')
      .description('print one dead letter of the stream (null when there is none with that id)')
      .argument('<key>', 'source stream key')
      .argument('<id>', 'dead-letter id'),
  ).action(async (key: string, id: string, _options: unknown, command: Command) => {
    const flags = flagsOf<FieldsFlags>(command);
    const options = { deadLetterKey: await deadLetterKeyOf(flags), ...(await fieldsOptions(flags)) };
    await validateKey(key, flags);
    const [{ isStreamId }, { RedisStreamsOptionError }, { DeadLetterService }] = await Promise.all([
      import('../../validation.js'),
      import('../../errors.js'),
      import('../../recovery/dead-letter.service.js'),
    ]);
    if (!isStreamId(id)) throw new RedisStreamsOptionError('deadLetterId', `must be a stream id, got "${id}"`);
    printJson(io, await withCliRedis(io, flags, (redis) => serviceOf(DeadLetterService, redis, flags).inspect(key, id, options)));
  });

  addSelectionOptions(
    dlq
      .command('redrive')
      .description('add dead letters back to the stream as new entries (with dlq:* history fields), then delete them')
      .argument('<key>', 'source stream key')
      .argument('[ids...]', 'dead-letter ids'),
  ).action(async (key: string, ids: string[], _options: unknown, command: Command) => {
    const flags = flagsOf<SelectionFlags>(command);
    await validateKey(key, flags);
    const selection = await selectionFrom(ids, flags, io);
    const { DeadLetterService } = await import('../../recovery/dead-letter.service.js');
    const deadLetterKey = await deadLetterKeyOf(flags);
    printJson(io, await withCliRedis(io, flags, (redis) => serviceOf(DeadLetterService, redis, flags).redrive(key, selection, { deadLetterKey })));
  });

  addSelectionOptions(
    dlq
      .command('purge')
      .description('delete dead letters for good')
      .argument('<key>', 'source stream key')
      .argument('[ids...]', 'dead-letter ids'),
  ).action(async (key: string, ids: string[], _options: unknown, command: Command) => {
    const flags = flagsOf<SelectionFlags>(command);
    await validateKey(key, flags);
    const selection = await selectionFrom(ids, flags, io);
    const { DeadLetterService } = await import('../../recovery/dead-letter.service.js');
    const deadLetterKey = await deadLetterKeyOf(flags);
    printJson(io, await withCliRedis(io, flags, (redis) => serviceOf(DeadLetterService, redis, flags).purge(key, selection, { deadLetterKey })));
  });
}

function addDlqOptions(command: Command): Command {
  return command.option('--dead-letter-key <key>', 'dead-letter stream key, or a template where %s stands for <key> (the app\'s deadLetterKey setting); default {<key>}:dead');
}

/**
 * The literal dead-letter key the flag names, or undefined: for the default, and for a `%s`
 * template, which the service fills in per stream (so that it applies to each partition of a
 * partitioned stream too, see `serviceOf`).
 */
async function deadLetterKeyOf(flags: DlqFlags): Promise<string | undefined> {
  if (flags.deadLetterKey === undefined || flags.deadLetterKey.includes('%s')) return undefined;
  return flags.deadLetterKey;
}

/** The service, with the flag's `%s` template as its key setting (the app's `deadLetterKey`). */
function serviceOf(
  Service: typeof import('../../recovery/dead-letter.service.js').DeadLetterService,
  redis: RedisClient,
  flags: DlqFlags,
): InstanceType<typeof Service> {
  const template = flags.deadLetterKey?.includes('%s') ? flags.deadLetterKey : undefined;
  return new Service(redis, template === undefined ? {} : { deadLetterKey: template });
}

/** The claim's `--fields-format` and `--encoding`, same meaning. */
function addFieldsOptions(command: Command): Command {
  command
    .option('--fields-format <format>', 'object ({name: value}; default) or pairs ([[name, value], ...] in stream order, duplicates kept)')
    .option('--encoding <encoding>', 'utf8 (default) or base64 (names and values as base64 of their exact bytes)');
  return addDlqOptions(command);
}

/** Validated before connecting: a bad value is a usage error naming the option. */
async function fieldsOptions(flags: FieldsFlags): Promise<{ fieldsFormat?: FieldsFormat; encoding?: FieldEncoding }> {
  const options = { fieldsFormat: flags.fieldsFormat as FieldsFormat | undefined, encoding: flags.encoding as FieldEncoding | undefined };
  const { resolveFieldsShape } = await import('../../claim/claimed-fields.js');
  resolveFieldsShape(options);
  return options;
}

function addSelectionOptions(command: Command): Command {
  command
    .option('--all', 'every dead letter of the stream present when the run starts')
    .option('--ids-from <file>', 'also read ids from a file ("-" for stdin): a JSON array, {"ids": [...]}, or ids separated by whitespace');
  return addDlqOptions(command);
}

async function validateKey(key: string, flags: DlqFlags): Promise<void> {
  const { nonEmptyStringOption } = await import('../../validation.js');
  nonEmptyStringOption('key', key);
  if (flags.deadLetterKey !== undefined) nonEmptyStringOption('deadLetterKey', flags.deadLetterKey);
}

async function selectionFrom(ids: readonly string[], flags: SelectionFlags, io: CliIo): Promise<DeadLetterSelection> {
  const all = [...ids, ...(flags.idsFrom === undefined ? [] : await readIds(flags.idsFrom, io))];
  if (flags.all) {
    if (all.length > 0) throw new CliError('give dead-letter ids or --all, not both', 2);
    return 'all';
  }
  if (all.length === 0) throw new CliError('give dead-letter ids (or --ids-from) or --all', 2);
  const { resolveSelection } = await import('../../recovery/dead-letter.service.js');
  return resolveSelection(all);
}

async function readIds(source: string, io: CliIo): Promise<string[]> {
  try {
    return parseIdList(source === '-' ? await io.readStdin() : await readFile(source, 'utf8'));
  } catch (error) {
    throw new CliError(`invalid --ids-from: ${(error as Error).message}`, 2);
  }
}
