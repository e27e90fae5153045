import { CommanderError } from 'commander';
import { processIo, type CliIo } from './io.js';
import { describeFailure } from './output.js';
import { createProgram } from './program.js';

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
