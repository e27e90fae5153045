import type { Command } from 'commander';
import type { CliIo } from './io.js';

/** What every command gets: where to write. Global flags are read with `flagsOf`. */
export interface CliContext {
  io: CliIo;
}

/** A subcommand module: adds itself to the program. New commands add one file and one list entry. */
export type RegisterCommand = (program: Command, context: CliContext) => void;

/** Options of the program itself, accepted anywhere on the line (before or after the subcommand). */
export interface GlobalFlags {
  url?: string;
  json?: boolean;
  cluster?: boolean;
  /** `--timeout <ms>`: as typed; checked (and defaulted) when the command connects. */
  timeout?: string;
}

export function addGlobalOptions(program: Command): Command {
  return program
    .option('--url <url>', 'Redis URL (redis://, rediss://, or redis+sentinel://host:port,host:port/primaryName); default $REDIS_URL, else redis://127.0.0.1:6379')
    .option('--cluster', 'the URL names one node of a Redis Cluster (found by itself when the node says cluster_enabled:1)')
    .option('--json', 'print JSON even at a terminal (it is always JSON when stdout is a pipe or a file)')
    .option('--timeout <ms>', 'give up when Redis does not answer within this many milliseconds: connecting, then each command (default 5000)');
}

/** A command's own flags together with the global ones, wherever they were typed. */
export function flagsOf<T extends object>(command: Command): T & GlobalFlags {
  return command.optsWithGlobals<T & GlobalFlags>();
}
