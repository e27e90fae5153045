import type { Command } from 'commander';
import type { ClaimOptions, FetchType, FieldEncoding, FieldsFormat } from '../../claim/claim.types.js';
import { integerArgument } from '../arguments.js';
import { flagsOf, type CliContext } from '../context.js';
import { printJson } from '../output.js';
import { withCliRedis } from '../redis-session.js';

interface ClaimFlags {
  minIdleTime: string;
  count?: string;
  maxRecords?: string;
  maxPages?: string;
  startId?: string;
  fetchType?: string;
  fieldsFormat?: string;
  encoding?: string;
  storeDir?: string;
}

export function registerClaimCommand(program: Command, { io }: CliContext): void {
  program
    .command('claim')
    .description('take over entries idle for at least --min-idle-time (XAUTOCLAIM) and print the result as JSON')
    .argument('<key>', 'stream key')
    .argument('<group>', 'consumer group (must exist)')
    .argument('<consumer>', 'consumer the entries become pending for')
    .requiredOption('--min-idle-time <duration>', 'milliseconds or ISO-8601 duration such as PT10M (required)')
    .option('--count <n>', 'page size of one XAUTOCLAIM, 1..10000 (default 100)')
    .option('--max-records <n>', 'entries one run may take, 1..10000 (default 100)')
    .option('--max-pages <n>', 'XAUTOCLAIM calls one run may make, 1..1000 (default 10)')
    .option('--start-id <id>', 'where the scan starts: 0-0 or the cursor of an earlier run (default 0-0)')
    .option('--fetch-type <type>', 'FETCH, FETCH_ONE, STORE or NONE (default FETCH)')
    .option('--fields-format <format>', 'object ({name: value}; default) or pairs ([[name, value], ...] in stream order, duplicates kept)')
    .option('--encoding <encoding>', 'utf8 (default) or base64 (names and values as base64 of their exact bytes)')
    .option('--store-dir <dir>', 'directory of the STORE file (default: <tmpdir>/nestjs-redis-streams)')
    .action(async (key: string, group: string, consumer: string, _options: unknown, command: Command) => {
      const flags = flagsOf<ClaimFlags>(command);
      const options: ClaimOptions = {
        key,
        group,
        consumer,
        minIdleTime: flags.minIdleTime,
        count: integerArgument(flags.count) as number | undefined,
        maxRecords: integerArgument(flags.maxRecords) as number | undefined,
        maxPages: integerArgument(flags.maxPages) as number | undefined,
        startId: flags.startId,
        fetchType: flags.fetchType as FetchType | undefined,
        fieldsFormat: flags.fieldsFormat as FieldsFormat | undefined,
        encoding: flags.encoding as FieldEncoding | undefined,
      };
      const { resolveClaimOptions } = await import('../../claim/claim-options.js');
      resolveClaimOptions(options); // a bad option is reported before connecting
      const { StreamClaimer } = await import('../../claim/stream-claimer.js');
      const result = await withCliRedis(io, flags, (redis) => new StreamClaimer(redis, { storeDirectory: flags.storeDir }).claim(options));
      printJson(io, result);
    });
}
