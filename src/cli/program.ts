import { Command, CommanderError } from 'commander';
import { COMMANDS } from './commands/index.js';
import { addGlobalOptions, type CliContext } from './context.js';
import { processIo, type CliIo } from './io.js';
import { describeFailure } from './output.js';
import { packageVersion } from './version.js';

export const CLI_NAME = 'nestjs-redis-streams';

/**
 * The commander program. Errors are thrown (exitOverride) rather than exiting, so `runCli`
 * (below; main.ts, the bin, calls it) prints every failure the same way: one line on stderr.
 * Only commander and the command definitions load here; each command imports what it runs
 * (ioredis, Nest) when it runs, so `--help` and the inspection commands start fast.
 */
export function createProgram(context: CliContext): Command {
  const program = new Command(CLI_NAME)
    .description('Redis Streams consumer-group tools: claim, ack, pending, info, dlq, delayed, top, pause, resume. Tables at a terminal, JSON otherwise.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => context.io.stdout(text),
      writeErr: (text) => context.io.stderr(text),
      // Usage errors are reported by runCli as one line, like every other failure.
      outputError: () => undefined,
    })
    .configureHelp({ showGlobalOptions: true })
    .showSuggestionAfterError(true)
    .allowExcessArguments(false);
  addGlobalOptions(program);
  for (const register of COMMANDS) register(program, context);
  return program;
}

/** Runs the CLI on `argv` (without node and script) and resolves with the exit code. */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  const program = createProgram({ io });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    // Help and version are "errors" to commander's exitOverride, with exit code 0.
    if (error instanceof CommanderError && error.exitCode === 0) return 0;
    // No command (or `dlq` alone): commander has printed the usage on stderr; say why it did.
    if (error instanceof CommanderError && error.code === 'commander.help') {
      io.stderr('error: missing command (see the usage above)\n');
      return 2;
    }
    const { line, exitCode } = describeFailure(error, await secretsFor(argv, io));
    io.stderr(`${line}\n`);
    return exitCode;
  }
}

/** Passwords of every URL the run may have used: `--url` values and REDIS_URL. */
async function secretsFor(argv: readonly string[], io: CliIo): Promise<string[]> {
  // Loaded on failure only: connection.js brings ioredis, which `--help` should not pay for.
  const { resolveUrl, secretsOf } = await import('./connection.js');
  const urls: string[] = [resolveUrl({}, io)];
  argv.forEach((arg, i) => {
    if (arg === '--url' && argv[i + 1] !== undefined) urls.push(argv[i + 1] as string);
    if (arg.startsWith('--url=')) urls.push(arg.slice('--url='.length));
  });
  return urls.flatMap(secretsOf);
}
