import { CommanderError } from 'commander';
import { RedisStreamsOptionError } from '../errors.js';
import { RedisStreamsClaimError } from '../claim/claim.errors.js';
import { flagFor } from './arguments.js';
import { Redactor } from '../redaction.js';
import { CliError } from './errors.js';
import type { CliIo } from './io.js';
import { terminalSafeJson, visibleLine } from './visible-text.js';
import { errorMessage } from '../error-message.js';

/**
 * The result, as one line of JSON: `JSON.stringify` of what the service returned, with DEL and C1
 * controls escaped too (`\u009b`), so that it parses to exactly the service's values and is
 * safe to print at a terminal.
 */
export function printJson(io: CliIo, value: unknown): void {
  io.stdout(`${jsonLine(value)}\n`);
}

export function jsonLine(value: unknown): string {
  return terminalSafeJson(JSON.stringify(value));
}

/** Positional arguments named in the service's option errors. */
const POSITIONAL = ['key', 'group', 'consumer', 'ids'];

/** One line for stderr and the exit code for an error, with every secret masked and control characters (of names it quotes) escaped. */
export function describeFailure(error: unknown, secrets: readonly string[]): { line: string; exitCode: number } {
  let line: string;
  let exitCode = 1;
  if (error instanceof RedisStreamsOptionError) {
    const detail = error.message.replace(/^Invalid option "[^"]*": /, '');
    line = `error: invalid ${flagFor(error.option, POSITIONAL)}: ${detail}`;
    exitCode = 2;
  } else if (error instanceof CliError) {
    line = `error: ${error.message}`;
    exitCode = error.exitCode;
  } else if (error instanceof CommanderError) {
    line = error.message.replace(/^error: /, 'error: ');
    exitCode = error.exitCode === 0 ? 0 : 2;
  } else if (error instanceof RedisStreamsClaimError) {
    line = `error: ${error.message}`;
  } else {
    line = `error: ${errorMessage(error)}`;
  }
  return { line: visibleLine(new Redactor(secrets).text(firstLine(line))), exitCode };
}

function firstLine(text: string): string {
  return text.split(/\r?\n/).find((part) => part.trim().length > 0) ?? text;
}
