import type { GlobalFlags } from './context.js';
import type { CliIo } from './io.js';
import { printJson } from './output.js';
import { visibleText } from './visible-text.js';

/**
 * A command's result: the human view at a terminal, the exact JSON otherwise (a pipe, a file, or
 * `--json`), so scripts see the same output whether or not a person also uses the command. The
 * human view names streams, groups and consumers in its headings too: made visible here, as a
 * whole, so no view has to remember it.
 */
export function printResult(io: CliIo, flags: GlobalFlags, value: unknown, human: () => string): void {
  if (wantsJson(io, flags)) printJson(io, value);
  else io.stdout(visibleText(human()));
}

export function wantsJson(io: CliIo, flags: GlobalFlags): boolean {
  return flags.json === true || io.terminal === undefined;
}
