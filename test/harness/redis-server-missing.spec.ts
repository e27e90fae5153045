import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisServerProcess } from '../helpers/redis-server.js';

/** A PATH holding node and nothing else, so redis-server is surely missing. */
const bin = mkdtempSync(join(tmpdir(), 'nrs-no-redis-'));
symlinkSync(process.execPath, join(bin, 'node'));

function script(name: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [`scripts/${name}.mjs`], { env: { PATH: bin, HOME: process.env.HOME, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('without redis-server: one line saying what is missing and how to get it', () => {
  afterAll(() => rmSync(bin, { recursive: true, force: true }));

  it('npm test, npm run sample and npm run bench stop at once with exit 1', async () => {
    for (const name of ['test', 'sample', 'bench']) {
      const run = await script(name);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      const lines = run.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^error: redis-server is not on the PATH: install it \(Debian\/Ubuntu: sudo apt-get install -y redis-server\), .*set REDIS_SERVER_BIN to a redis-server binary/);
      // Only the sample can use an existing server; the test harness always starts its own.
      expect(lines[0]!.includes('REDIS_URL')).toBe(name === 'sample');
    }
  });

  it('a REDIS_SERVER_BIN that is not there is named', async () => {
    const run = await script('test', { REDIS_SERVER_BIN: join(bin, 'redis-server') });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`error: REDIS_SERVER_BIN=${join(bin, 'redis-server')} is not an executable file: install it (Debian/Ubuntu: sudo apt-get install -y redis-server), or set REDIS_SERVER_BIN to a redis-server binary\n`);
  });

  it('the harness rejects with the same advice instead of an unhandled spawn ENOENT', async () => {
    const before = process.env.REDIS_SERVER_BIN;
    process.env.REDIS_SERVER_BIN = join(bin, 'redis-server');
    try {
      await expect(RedisServerProcess.start()).rejects.toThrow(`${join(bin, 'redis-server')} cannot be started (ENOENT): install redis-server`);
    } finally {
      if (before === undefined) delete process.env.REDIS_SERVER_BIN;
      else process.env.REDIS_SERVER_BIN = before;
    }
  });
});
