import { spawn } from 'node:child_process';
import { compiledPath } from './compiled.js';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the compiled CLI (call `ensureCompiled()` first) with `args`; killed after `timeoutMs`. */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 20_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [compiledPath('src/cli/main.ts'), ...args], {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
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
  });
}
