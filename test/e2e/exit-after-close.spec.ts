import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compiledPath, ensureCompiled } from '../helpers/compiled.js';
import { freePort, RedisServerProcess } from '../helpers/redis-server.js';

describe('close() leaves nothing running', () => {
  let redis: RedisServerProcess;
  beforeAll(async () => {
    await ensureCompiled();
    redis = await RedisServerProcess.start();
  }, 180_000);
  afterAll(async () => {
    await redis.stop();
  });

  it('a process that ran a server, recovery and a client exits on its own once both are closed', async () => {
    const { outcome, stdout, stderr } = await runUntilExit('test/fixtures/exit-when-closed.ts', redis.url);
    expect({ outcome, stderr }).toEqual({ outcome: 0, stderr: '' });
    expect(stdout).toContain('closed handled=20 doubled=42');
  }, 60_000);

  it('a process whose listen() failed (no Redis) exits on its own: no connection is left reconnecting', async () => {
    const port = await freePort();
    const { outcome, stdout, stderr } = await runUntilExit('test/fixtures/exit-when-listen-failed.ts', String(port));
    expect({ outcome, stderr }).toEqual({ outcome: 0, stderr: '' });
    expect(stdout).toMatch(/^listen failed: cannot connect to Redis at 127\.0\.0\.1:\d+ within 1000 ms: connection refused/m);
  }, 60_000);
});

/**
 * Runs a compiled fixture and waits for it to exit on its own (exit code), or reports
 * 'still running' after 20 s and kills it: a timer or socket left behind keeps a process alive.
 */
async function runUntilExit(fixture: string, arg: string): Promise<{ outcome: number | null | 'still running'; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [compiledPath(fixture), arg], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const timedOut = new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 20_000).unref());
  const outcome = await Promise.race([exit, timedOut]);
  if (outcome === 'still running') child.kill('SIGKILL');
  return { outcome, stdout, stderr };
}
