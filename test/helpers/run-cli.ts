import { spawn } from 'node:child_process';
import { compiledPath } from './compiled.js';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliRunOptions {
  /** Killed (and the run rejected) after this long; default 20 s. */
  timeoutMs?: number;
  /** Written to the CLI's stdin, which is then closed; default: an empty stdin. */
  stdin?: string;
  /** Arguments for node itself, before the script (`--import ./hook.mjs`). */
  nodeArgs?: readonly string[];
  /** Called with everything on stdout so far, each time more arrives (to act in the middle of a run). */
  onStdout?: (stdout: string) => void;
}

/**
 * Runs the compiled CLI (call `ensureCompiled()` first) with `args`, the environment holding only
 * PATH and `env`.
 */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}, options: CliRunOptions = {}): Promise<CliRun> {
  const { timeoutMs = 20_000, stdin, nodeArgs = [], onStdout } = options;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, compiledPath('src/cli/main.ts'), ...args], {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      onStdout?.(stdout);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`CLI ${args.join(' ')} did not finish within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    // A CLI that exits without reading stdin makes the write fail (EPIPE): not the test's concern.
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin ?? '');
  });
}
