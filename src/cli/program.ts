import { Command } from 'commander';
import { COMMANDS } from './commands/index.js';
import type { CliContext } from './context.js';

export const CLI_NAME = 'nestjs-redis-streams';

/**
 * The commander program. Errors are thrown (exitOverride) rather than exiting, so `runCli`
 * prints every failure the same way: one line on stderr.
 */
export function createProgram(context: CliContext): Command {
  const program = new Command(CLI_NAME)
    .description('Redis Streams consumer-group tools: claim, ack, pending, info, dlq. Prints one JSON object per run.')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => context.io.stdout(text),
      writeErr: (text) => context.io.stderr(text),
      // Usage errors are reported by runCli as one line, like every other failure.
      outputError: () => undefined,
    })
    .showSuggestionAfterError(true)
    .allowExcessArguments(false);
  for (const register of COMMANDS) register(program, context);
  return program;
}
