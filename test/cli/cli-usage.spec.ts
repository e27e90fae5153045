import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCompiled } from '../helpers/compiled.js';
import { runCli, type CliRun } from '../helpers/run-cli.js';
import { freePort } from '../helpers/redis-server.js';

/**
 * A CLI process takes well under a second on an idle machine, several seconds under load: the
 * deadline of one run, and the test timeout (tests run up to six in a row), fit the latter.
 */
const CLI_DEADLINE_MS = 60_000;
const VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;

function cli(args: string[], nodeArgs: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  return runCli(args, env, { timeoutMs: CLI_DEADLINE_MS, nodeArgs });
}

describe('CLI usage: version, help, global options', { timeout: 180_000 }, () => {
  let closedUrl: string;
  const loads = mkdtempSync(join(tmpdir(), 'nrs-cli-loads-'));

  beforeAll(async () => {
    await ensureCompiled();
    closedUrl = `redis://127.0.0.1:${await freePort()}`;
  }, 300_000);
  afterAll(() => rmSync(loads, { recursive: true, force: true }));

  it('--version and -V print the package version on stdout, exit 0', async () => {
    for (const flag of ['--version', '-V']) {
      expect(await cli([flag])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
    }
  });

  it('--help prints the usage on stdout, exit 0, nothing on stderr', async () => {
    for (const args of [['--help'], ['help'], ['dlq', '--help'], ['top', '--help']]) {
      const run = await cli(args);
      expect(run.code).toBe(0);
      expect(run.stderr).toBe('');
      expect(run.stdout).toMatch(/^Usage: nestjs-redis-streams /);
    }
  });

  it('no command (and dlq alone): the usage and one error line on stderr, exit 2, no "(outputHelp)"', async () => {
    for (const args of [[], ['dlq']]) {
      const run = await cli(args);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^Usage: nestjs-redis-streams /);
      expect(run.stderr).not.toContain('outputHelp');
      expect(run.stderr.trimEnd().split('\n').at(-1)).toBe('error: missing command (see the usage above)');
    }
  });

  it('--url and --json are accepted before the command, between its arguments and after them', async () => {
    const lines = [
      ['--url', closedUrl, 'pending', 'orders', 'billing'],
      ['pending', '--url', closedUrl, 'orders', 'billing'],
      ['pending', 'orders', '--json', 'billing', `--url=${closedUrl}`],
      ['--json', 'dlq', '--url', closedUrl, 'list', 'orders'],
    ];
    for (const args of lines) {
      const run = await cli(args);
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(`error: cannot connect to ${closedUrl}: connection refused\n`);
    }
  });

  it('--help, info, pending, claim and ack never load Nest (nor --help ioredis); dlq does', async () => {
    const loaded = async (name: string, args: string[]) => {
      const file = join(loads, name);
      const run = await cli(args, ['--import', './test/fixtures/record-loads.mjs'], { RECORD_LOADS: file });
      const urls = readFileSync(file, 'utf8');
      return { run, nest: urls.includes('/node_modules/@nestjs/'), ioredis: urls.includes('/node_modules/ioredis/') };
    };
    const help = await loaded('help', ['--help']);
    expect(help.run.code).toBe(0);
    expect(help).toMatchObject({ nest: false, ioredis: false });
    for (const args of [
      ['info', 'orders'],
      ['pending', 'orders', 'billing', '--entries'],
      ['claim', 'orders', 'billing', 'c', '--min-idle-time', '1000'],
      ['ack', 'orders', 'billing', '1-0'],
    ]) {
      const result = await loaded(args[0]!, [...args, '--url', closedUrl]);
      expect(result.run.stderr).toContain('connection refused'); // it ran as far as connecting
      expect(result).toMatchObject({ nest: false, ioredis: true });
    }
    expect(await loaded('dlq', ['dlq', 'list', 'orders', '--url', closedUrl])).toMatchObject({ nest: true });
  });
});
