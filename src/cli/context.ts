import type { Command } from 'commander';
import type { CliIo } from './io.js';

/** What every command gets: where to write. Connection flags are added per command with `addConnectionOption`. */
export interface CliContext {
  io: CliIo;
}

/** A subcommand module: adds itself to the program. New commands (e.g. `dlq`) add one file and one list entry. */
export type RegisterCommand = (program: Command, context: CliContext) => void;

/** `--url`, shared by every command that talks to Redis. */
export function addConnectionOption(command: Command): Command {
  return command.option('--url <url>', 'Redis URL (redis:// or rediss://); default $REDIS_URL, else redis://127.0.0.1:6379');
}
