import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisServerProcess } from '../helpers/redis-server.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A folder for a PATH that holds node and only what a test puts there, so redis-server is surely missing. */
function binFolder(): string {
  const bin = mkdtempSync(join(tmpdir(), 'nrs-no-redis-'));
  chmodSync(bin, 0o755);
  symlinkSync(process.execPath, join(bin, 'node'));
  return bin;
}

const bin = binFolder();
const folders = [bin];

function run(args: string[], env: NodeJS.ProcessEnv, uid?: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: { HOME: process.env.HOME, ...env }, stdio: ['ignore', 'pipe', 'pipe'], ...(uid === undefined ? {} : { uid, gid: uid }) });
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

const script = (name: string, env: NodeJS.ProcessEnv = {}): Promise<Run> => run([`scripts/${name}.mjs`], { PATH: bin, ...env });

/**
 * A fake apt-get (a node script) that records each call with its DEBIAN_FRONTEND and, on
 * `install`, puts an executable redis-server beside itself, as Debian's package puts one on the PATH.
 */
function fakeApt(folder: string, { installFails = false } = {}): string {
  const log = join(folder, 'apt.log');
  writeFileSync(
    join(folder, 'apt-get'),
    `#!${process.execPath}
const fs = require('node:fs');
const args = process.argv.slice(2);
fs.appendFileSync(${JSON.stringify(log)}, [process.getuid(), process.env.DEBIAN_FRONTEND, ...args].join(' ') + '\\n');
if (args[0] === 'install') {
  if (${installFails}) { console.error('E: Unable to locate package redis-server'); process.exit(100); }
  fs.writeFileSync(${JSON.stringify(join(folder, 'redis-server'))}, '#!/bin/sh\\necho fake\\n', { mode: 0o755 });
}
`,
    { mode: 0o755 },
  );
  return log;
}

/** A sudo that refuses (needs a password) or runs the command as it is, as `sudo -n` would for root. */
function fakeSudo(folder: string, allows: boolean): void {
  writeFileSync(join(folder, 'sudo'), `#!${process.execPath}\nconst args = process.argv.slice(2);\nif (!${allows} || args[0] !== '-n') { console.error('sudo: a password is required'); process.exit(1); }\nconst r = require('node:child_process').spawnSync(args[1], args.slice(2), { stdio: 'inherit', env: { ...process.env, PATH: process.env.PATH + ':/usr/bin:/bin' } });\nprocess.exit(r.status ?? 1);\n`, { mode: 0o755 });
}

/** Runs the provisioning helper as the sample does, then says which redis-server it found. */
function provision(folder: string, uid?: number): Promise<Run> {
  // A copy beside the fakes, so a child with another uid can read it whatever the clone's modes.
  copyFileSync('scripts/redis-server-provision.mjs', join(folder, 'provision.mjs'));
  const code = `import(${JSON.stringify(join(folder, 'provision.mjs'))}).then((m) => { m.ensureRedisServer({ orRedisUrl: true }); console.log('found ' + m.findRedisServer()); })`;
  return run(['-e', code], { PATH: folder }, uid);
}

const asRoot = process.getuid?.() === 0;

describe('without redis-server', () => {
  afterAll(() => {
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  });

  it('npm test, npm run sample and npm run bench stop at once with one line saying what to run where nothing can install it', async () => {
    for (const name of ['test', 'sample', 'bench']) {
      const outcome = await script(name);
      expect(outcome.code).toBe(1);
      expect(outcome.stdout).toBe('');
      const lines = outcome.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^error: redis-server is not on the PATH and cannot be installed from here: install redis-server with the system's package manager \(Debian\/Ubuntu: `sudo apt-get install -y redis-server`\), or set REDIS_SERVER_BIN to a redis-server binary/);
      // Only the sample can use an existing server; the test harness always starts its own.
      expect(lines[0]!.includes('REDIS_URL')).toBe(name === 'sample');
    }
  });

  it('a REDIS_SERVER_BIN that is not there is named, and nothing is installed in its place', async () => {
    const folder = binFolder();
    folders.push(folder);
    const log = fakeApt(folder);
    const outcome = await run(['scripts/test.mjs'], { PATH: folder, REDIS_SERVER_BIN: join(folder, 'redis-server') });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toBe(`error: REDIS_SERVER_BIN=${join(folder, 'redis-server')} is not an executable file: run \`sudo apt-get install -y redis-server\`, or set REDIS_SERVER_BIN to a redis-server binary\n`);
    expect(existsSync(log)).toBe(false);
  });

  it.skipIf(!asRoot)('as root on Debian, Debian\'s package is installed after one line saying so, lists updated first', async () => {
    const folder = binFolder();
    folders.push(folder);
    const log = fakeApt(folder);
    const outcome = await provision(folder);
    expect(outcome.stderr).toBe("redis-server is not on the PATH: installing Debian's redis-server package (apt-get install -y redis-server)\n");
    expect(outcome.stdout).toBe(`found ${join(folder, 'redis-server')}\n`);
    expect(outcome.code).toBe(0);
    expect(readFileSync(log, 'utf8')).toBe('0 noninteractive update -qq\n0 noninteractive install -y -qq redis-server\n');
  });

  it.skipIf(!asRoot)('a failed install shows apt-get\'s words and the command to run, exit 1', async () => {
    const folder = binFolder();
    folders.push(folder);
    fakeApt(folder, { installFails: true });
    const outcome = await provision(folder);
    expect(outcome.code).toBe(1);
    expect(outcome.stdout).toBe('');
    expect(outcome.stderr.split('\n')).toEqual([
      "redis-server is not on the PATH: installing Debian's redis-server package (apt-get install -y redis-server)",
      'E: Unable to locate package redis-server',
      'error: installing redis-server failed (above): run `sudo apt-get install -y redis-server`, or set REDIS_SERVER_BIN to a redis-server binary, or set REDIS_URL to an existing server',
      '',
    ]);
  });

  // Another user than root: a real uid change, so the helper sees what a developer's account sees.
  it.skipIf(!asRoot)('as another user, `sudo -n` installs it when sudo needs no password, else the command to run is printed', async () => {
    const nobody = 65534;
    const allowed = binFolder();
    folders.push(allowed);
    const log = fakeApt(allowed);
    fakeSudo(allowed, true);
    chmodSync(allowed, 0o777);
    const installed = await provision(allowed, nobody);
    expect(installed.stderr).toBe("redis-server is not on the PATH: installing Debian's redis-server package (sudo -n apt-get install -y redis-server)\n");
    expect(installed.code).toBe(0);
    // The fake sudo runs the command as the same user; a real one runs it as root.
    expect(readFileSync(log, 'utf8')).toBe(`${nobody} noninteractive update -qq\n${nobody} noninteractive install -y -qq redis-server\n`);

    const refused = binFolder();
    folders.push(refused);
    const refusedLog = fakeApt(refused);
    fakeSudo(refused, false);
    const advised = await provision(refused, nobody);
    expect(advised.code).toBe(1);
    expect(advised.stderr).toBe('error: redis-server is not on the PATH and cannot be installed from here: run `sudo apt-get install -y redis-server`, or set REDIS_SERVER_BIN to a redis-server binary, or set REDIS_URL to an existing server\n');
    expect(existsSync(refusedLog)).toBe(false);
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
