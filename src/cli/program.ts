import { Command } from 'commander';
import { COMMANDS } from './commands/index.js';
import { addGlobalOptions, type CliContext } from './context.js';
import { packageVersion } from './version.js';

export const CLI_NAME = 'nestjs-redis-streams';

/**
 * The commander program. Errors are thrown (exitOverride) rather than exiting, so `runCli`
 * prints every failure the same way: one line on stderr. Only commander and the command
 * definitions load here; each command imports what it runs (ioredis, Nest) when it runs, so
 * `--help` and the inspection commands start fast.
 */
export function createProgram(context: CliContext): Command {
  const program = new Command(CLI_NAME)
    .description('Redis Streams consumer-group tools: claim, ack, pending, info, dlq, delayed, top. Tables at a terminal, JSON otherwise.')
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
