import type { GlobalFlags } from './context.js';
import type { CliIo } from './io.js';
import { printJson } from './output.js';

/**
 * A command's result: the human view at a terminal, the exact JSON otherwise (a pipe, a file, or
 * `--json`), so scripts see the same output whether or not a person also uses the command.
 */
export function printResult(io: CliIo, flags: GlobalFlags, value: unknown, human: () => string): void {
  if (wantsJson(io, flags)) printJson(io, value);
  else io.stdout(human());
}

export function wantsJson(io: CliIo, flags: GlobalFlags): boolean {
  return flags.json === true || io.terminal === undefined;
}
