import { mkdtempSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { StreamClaimService } from '../../src/module/claim-services.js';
import { StreamInspectionService } from '../../src/module/claim-services.js';
import { moveToDeadLetter } from '../../src/recovery/dead-letter-move.js';
import { releaseForRetry } from '../../src/recovery/retry-release.js';
import { redisNow } from '../../src/redis/server-time.js';
import { capabilitiesOf } from '../helpers/capabilities.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { runCli, type CliRun } from '../helpers/run-cli.js';
import { freePort, RedisServerProcess } from '../helpers/redis-server.js';
import { makeIdle } from '../helpers/claim-fixtures.js';

/**
 * A CLI process takes well under a second on an idle machine, several seconds under load: the
 * deadline of one run, and the test timeout (tests run up to five in a row), fit the latter.
 */
const CLI_DEADLINE_MS = 60_000;

function cli(args: string[], env: NodeJS.ProcessEnv = {}, stdin?: string): Promise<CliRun> {
  return runCli(args, env, { timeoutMs: CLI_DEADLINE_MS, ...(stdin === undefined ? {} : { stdin }) });
}

/** A failure: non-zero exit, nothing on stdout, exactly one line on stderr. */
function expectOneLineFailure(run: CliRun, code: number): string {
  expect(run.code).toBe(code);
  expect(run.stdout).toBe('');
  expect(run.stderr.endsWith('\n')).toBe(true);
  expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
  return run.stderr.trimEnd();
}

describe('CLI nestjs-redis-streams', { timeout: 180_000 }, () => {
  let server: RedisServerProcess;
  let closedUrl: string;

  beforeAll(async () => {
    await ensureCompiled();
    server = await RedisServerProcess.start();
    closedUrl = `redis://127.0.0.1:${await freePort()}`;
  }, 240_000);
  afterAll(async () => {
    await server.stop();
  });

  describe('bad input: exit code 2 and one line naming the option, before connecting', () => {
    const claim = ['claim', 'orders', 'billing', 'recovery'];
    it('claim names the bad option: range, integer, start id, fetch type, duration, missing', async () => {
      const cases: [string[], string][] = [
        [['--min-idle-time', 'PT10M', '--max-records', '10001'], '--max-records'],
        [['--min-idle-time', 'PT10M', '--count', 'ten'], '--count'],
        [['--min-idle-time', 'PT10M', '--start-id', 'latest'], '--start-id'],
        [['--min-idle-time', 'PT10M', '--fetch-type', 'ALL'], '--fetch-type'],
        [['--min-idle-time', 'PT0.0004S'], '--min-idle-time'],
        [[], '--min-idle-time'],
      ];
      const runs = await Promise.all(cases.map(([extra]) => cli([...claim, ...extra, '--url', closedUrl])));
      runs.forEach((run, i) => {
        const line = expectOneLineFailure(run, 2);
        expect(line).toContain(cases[i]![1]);
        expect(line).not.toContain('connect');
      });
    });

    it('missing arguments and bad ids are usage errors too', async () => {
      const [missing, badId, badCount] = await Promise.all([
        cli(['claim', 'orders', '--min-idle-time', '1']),
        cli(['ack', 'orders', 'billing', '1-0', 'oops', '--url', closedUrl]),
        cli(['pending', 'orders', 'billing', '--entries', '--count', '0', '--url', closedUrl]),
      ]);
      expect(expectOneLineFailure(missing, 2)).toContain("'group'");
      expect(expectOneLineFailure(badId, 2)).toContain('<ids>');
      expect(expectOneLineFailure(badCount, 2)).toContain('--count');
    });
  });

  it('connection refused: says so on one line, exit 1, and never prints the password', async () => {
    const url = closedUrl.replace('redis://', 'redis://admin:s3cr3t-P4ss@');
    const [flagRun, envRun] = await Promise.all([
      cli(['claim', 'orders', 'billing', 'r', '--min-idle-time', 'PT10M', '--url', url]),
      cli(['info', 'orders'], { REDIS_URL: url }),
    ]);
    const viaFlag = expectOneLineFailure(flagRun, 1);
    expect(viaFlag).toContain('connection refused');
    expect(viaFlag).toContain('admin:***@');
    expect(viaFlag).not.toContain('s3cr3t');
    const viaEnv = expectOneLineFailure(envRun, 1);
    expect(viaEnv).toContain('connection refused');
    expect(viaEnv).not.toContain('s3cr3t');
  });

  it('a rejected password is reported without the password', async () => {
    const admin = server.client();
    await admin.acl('SETUSER', 'alice', 'on', '>right-pass', '~*', '+@all');
    admin.disconnect();
    const url = server.url.replace('redis://', 'redis://alice:wr0ng-s3cret@');
    const line = expectOneLineFailure(await cli(['info', 'orders', '--url', url]), 1);
    expect(line).toMatch(/WRONGPASS|NOAUTH|invalid/i);
    expect(line).not.toContain('wr0ng-s3cret');
  });

  describe('a paused Redis (SIGSTOP: the TCP handshake completes, nothing answers)', () => {
    let paused: RedisServerProcess;

    beforeAll(async () => {
      paused = await RedisServerProcess.start();
      const client = paused.client();
      await client.xgroup('CREATE', 'orders', 'billing', '0', 'MKSTREAM');
      const id = (await client.xadd('orders', '*', 'n', '1')) as string;
      await client.xreadgroup('GROUP', 'billing', 'w1', 'STREAMS', 'orders', '>');
      await moveToDeadLetter(client, { stream: 'orders', group: 'billing', ids: [id], reason: 'manual' });
      client.disconnect();
    }, 60_000);
    afterEach(() => paused.resume());
    afterAll(async () => {
      await paused.stop();
    });

    // One test: the runs with --timeout 1000 go on while those with the default 5 s wait.
    it('info and pending give up within the default deadline (5 s), every other command within --timeout: exit 1, one line', async () => {
      paused.pause();
      const url = ['--url', paused.url, '--timeout', '1000'];
      const [byDefault, others] = await Promise.all([
        Promise.all([cli(['info', 'orders', '--url', paused.url]), cli(['pending', 'orders', 'billing', '--url', paused.url])]),
        Promise.all([
          cli(['claim', 'orders', 'billing', 'r', '--min-idle-time', '1', ...url]),
          cli(['ack', 'orders', 'billing', '1-0', ...url]),
          cli(['pending', 'orders', 'billing', '--entries', ...url]),
          cli(['info', 'orders', '--group', 'billing', ...url]),
          cli(['dlq', 'list', 'orders', ...url]),
          cli(['dlq', 'purge', 'orders', '--all', ...url]),
          cli(['top', 'orders', '--iterations', '1', ...url]),
        ]),
      ]);
      for (const run of byDefault) expect(expectOneLineFailure(run, 1)).toBe(`error: cannot connect to ${paused.url}: no answer within 5000 ms (--timeout)`);
      for (const run of others) expect(expectOneLineFailure(run, 1)).toBe(`error: cannot connect to ${paused.url}: no answer within 1000 ms (--timeout)`);
    });

    it('paused in the middle of a run: top gives up on the sample Redis does not answer', async () => {
      let pausedAt = 0;
      const run = await runCli(['top', 'orders', '--interval', '100', '--timeout', '1000', '--url', paused.url], {}, {
        timeoutMs: CLI_DEADLINE_MS,
        onStdout: (stdout) => {
          if (pausedAt === 0 && stdout.includes('\n')) {
            pausedAt = Date.now();
            paused.pause();
          }
        },
      });
      expect(pausedAt).toBeGreaterThan(0);
      expect(run.code).toBe(1);
      expect(JSON.parse(run.stdout.split('\n')[0]!)).toMatchObject({ rows: [{ stream: 'orders', group: 'billing' }] });
      expect(run.stderr).toBe(`error: no answer from ${paused.url} within 1000 ms (--timeout)\n`);
    });

    it('--timeout must be a whole number of milliseconds (a usage error, before connecting)', async () => {
      const runs = await Promise.all(['0', 'soon', '2147483648'].map((value) => cli(['info', 'orders', '--timeout', value, '--url', closedUrl])));
      for (const run of runs) expect(expectOneLineFailure(run, 2)).toMatch(/^error: invalid --timeout: /);
    });
  });

  describe('against redis-server', () => {
    let redis: Redis;
    const storeDir = mkdtempSync(join(tmpdir(), 'nrs-cli-store-'));

    beforeAll(() => {
      redis = server.client();
    });
    afterAll(async () => {
      redis.disconnect();
      await rm(storeDir, { recursive: true, force: true });
    });
    beforeEach(async () => {
      await redis.flushall();
    });

    /** The same pending state in database `db`: explicit ids, 12 idle entries, one deleted. */
    async function prepare(db: number): Promise<Redis> {
      const client = new Redis({ port: server.port, db, maxRetriesPerRequest: 3 });
      await client.xgroup('CREATE', 'orders', 'billing', '0', 'MKSTREAM');
      for (let i = 1; i <= 12; i++) await client.xadd('orders', `${1_700_000_000_000 + i}-0`, 'n', String(i), '__proto__', 'p');
      const ids = (await client.xreadgroup('GROUP', 'billing', 'w1', 'STREAMS', 'orders', '>')) as [string, [string, string[]][]][];
      const pending = ids[0]![1].map(([id]) => id);
      await makeIdle(client, 'orders', 'billing', 'w1', pending);
      await client.xdel('orders', pending[1]!);
      return client;
    }

    it('claim prints exactly JSON.stringify of the service result for the same state', async () => {
      const a = await prepare(0);
      const b = await prepare(1);
      try {
        for (const [fetchType, extra] of [
          ['FETCH', { count: 4, maxPages: 2 }],
          ['NONE', {}],
          ['FETCH_ONE', {}],
        ] as const) {
          const options = { key: 'orders', group: 'billing', consumer: 'recovery', minIdleTime: 'PT10M', fetchType, ...extra };
          const expected = await new StreamClaimService(a).claim(options);
          const args = ['claim', 'orders', 'billing', 'recovery', '--min-idle-time', 'PT10M', '--fetch-type', fetchType];
          if ('count' in extra) args.push('--count', String(extra.count), '--max-pages', String(extra.maxPages));
          const run = await cli([...args, '--url', `${server.url}/1`]);
          expect(run.stderr).toBe('');
          expect(run.code).toBe(0);
          expect(run.stdout).toBe(`${JSON.stringify(expected)}\n`);
        }
      } finally {
        a.disconnect();
        b.disconnect();
      }
    });

    it('STORE through the CLI writes the file under --store-dir', async () => {
      (await prepare(0)).disconnect();
      const run = await cli(['claim', 'orders', 'billing', 'recovery', '--min-idle-time', '600000', '--fetch-type', 'STORE', '--store-dir', storeDir, '--url', server.url]);
      expect(run.code).toBe(0);
      const result = JSON.parse(run.stdout) as { uri: string; ids: string[]; count: number };
      expect(result.count).toBe(11);
      expect(result.uri.startsWith(`file://${storeDir}/`)).toBe(true);
    });

    it('flow 1: recover and acknowledge (claim, process, ack --ids-from)', async () => {
      (await prepare(0)).disconnect();
      const claimed = await cli(['claim', 'orders', 'billing', 'billing_recovery', '--min-idle-time', 'PT10M', '--max-records', '100', '--url', server.url]);
      expect(claimed.code).toBe(0);
      const result = JSON.parse(claimed.stdout) as { count: number; ids: string[]; messages: { id: string }[] };
      expect(result.count).toBe(11);
      const file = join(storeDir, 'claim.json');
      writeFileSync(file, claimed.stdout);
      const acked = await cli(['ack', 'orders', 'billing', '--ids-from', file, '--url', server.url]);
      expect(acked.code).toBe(0);
      expect(JSON.parse(acked.stdout)).toEqual({ key: 'orders', group: 'billing', requested: 11, acknowledged: 11 });
      const viaStdin = await cli(['ack', 'orders', 'billing', '--ids-from', '-', '--url', server.url], {}, result.ids.join('\n'));
      expect(JSON.parse(viaStdin.stdout)).toMatchObject({ requested: 11, acknowledged: 0 });
      // The entry deleted while pending: gone on Redis 7.0+, still pending on 6.2 (docs/claim.md).
      const { lagTracking } = await capabilitiesOf(redis);
      const left = (await redis.xpending('orders', 'billing', '-', '+', 100)) as [string, ...unknown[]][];
      expect(left.map(([id]) => id)).toEqual(lagTracking ? [] : [`${1_700_000_000_002}-0`]);
    });

    it('flow 2: scan a large pending list over several runs, passing cursor back as --start-id', async () => {
      await redis.xgroup('CREATE', 'orders', 'billing', '0', 'MKSTREAM');
      const pipeline = redis.pipeline();
      for (let i = 0; i < 1200; i++) pipeline.xadd('orders', '*', 'n', String(i));
      await pipeline.exec();
      await redis.xreadgroup('GROUP', 'billing', 'w1', 'COUNT', 5000, 'STREAMS', 'orders', '>');
      const idle = [await redis.xadd('orders', '*', 'late', '1'), await redis.xadd('orders', '*', 'late', '2')] as string[];
      await redis.xreadgroup('GROUP', 'billing', 'w1', 'STREAMS', 'orders', '>');
      await makeIdle(redis, 'orders', 'billing', 'w1', idle);

      let start = '0-0';
      const runs: { count: number; ids: string[]; completed: boolean; cursor: string; pages: number }[] = [];
      for (let i = 0; i < 10; i++) {
        const run = await cli(['claim', 'orders', 'billing', 'billing_recovery', '--min-idle-time', 'PT10M', '--start-id', start, '--count', '50', '--max-pages', '2', '--fetch-type', 'NONE', '--url', server.url]);
        expect(run.code).toBe(0);
        const result = JSON.parse(run.stdout) as (typeof runs)[number];
        runs.push(result);
        if (result.completed) break;
        start = result.cursor;
      }
      // 50 × 10 = 500 pending entries examined per page, 1000 per run: the first run only sees fresh ones.
      expect(runs.map((r) => r.completed)).toEqual([false, true]);
      expect(runs[0]).toMatchObject({ count: 0, ids: [], pages: 2 });
      expect(runs[0]!.cursor).not.toBe('0-0');
      expect(runs[1]).toMatchObject({ count: 2, ids: idle, cursor: '0-0' });
    });

    it('pending and info print the services\' results', async () => {
      const client = await prepare(0);
      try {
        const inspection = new StreamInspectionService(client);
        const summary = await cli(['pending', 'orders', 'billing', '--url', server.url]);
        expect(summary.stdout).toBe(`${JSON.stringify(await inspection.pendingSummary('orders', 'billing'))}\n`);
        const entries = JSON.parse((await cli(['pending', 'orders', 'billing', '--entries', '--count', '3', '--url', server.url])).stdout) as {
          entries: { id: string; consumer: string; deliveryCount: number }[];
        };
        expect(entries.entries.map((e) => [e.id, e.consumer, e.deliveryCount])).toEqual([
          ['1700000000001-0', 'w1', 1],
          ['1700000000002-0', 'w1', 1],
          ['1700000000003-0', 'w1', 1],
        ]);
        const info = await cli(['info', 'orders', '--url', server.url]);
        expect(info.stdout).toBe(
          `${JSON.stringify({ key: 'orders', stream: await inspection.stream('orders'), groups: await inspection.groups('orders') })}\n`,
        );
        const withGroup = JSON.parse((await cli(['info', 'orders', '--group', 'billing', '--url', server.url])).stdout) as {
          consumers: { name: string; pending: number }[];
        };
        expect(withGroup.consumers.map((c) => [c.name, c.pending])).toEqual([['w1', 12]]);
        const missing = expectOneLineFailure(await cli(['claim', 'orders', 'nope', 'r', '--min-idle-time', '1', '--url', server.url]), 1);
        expect(missing).toBe('error: group "nope" does not exist on stream "orders"');
      } finally {
        client.disconnect();
      }
    });

    it('pending --entries --retry-consumer: entries of that retry consumer show their next retry time and last error', async () => {
      await redis.xgroup('CREATE', 'jobs', 'g', '0', 'MKSTREAM');
      const failed = (await redis.xadd('jobs', '*', 'n', '1')) as string;
      const running = (await redis.xadd('jobs', '*', 'n', '2')) as string;
      await redis.xreadgroup('GROUP', 'g', 'w1', 'STREAMS', 'jobs', '>');
      // As a server with `recovery.retryConsumer: 'backoff'` leaves a failed entry.
      const entries = [{ id: failed, deliveryCount: 1, delayMs: 600_000, error: 'Error: downstream 503' }];
      // Redis' clock in ms, read before the release: the release's clock is not behind it.
      const readAt = await redisNow(redis);
      await releaseForRetry(redis, { stream: 'jobs', group: 'g', consumer: 'w1', retryConsumer: 'backoff', entries });
      const list = async (...extra: string[]) => {
        const run = await cli(['pending', 'jobs', 'g', '--entries', ...extra, '--url', server.url]);
        expect(run.stderr).toBe('');
        return (JSON.parse(run.stdout) as { entries: { id: string; consumer: string; retry?: Record<string, unknown> }[] }).entries;
      };

      const named = await list('--retry-consumer', 'backoff');
      expect(named.map((entry) => [entry.id, entry.consumer, entry.retry])).toEqual([
        [failed, 'backoff', { nextRetryAt: named[0]!.retry!.nextRetryAt, delayMs: 600_000, failedBy: 'w1', lastError: 'Error: downstream 503' }],
        [running, 'w1', undefined],
      ]);
      // Released after we read the clock: the next retry is 10 minutes after that, on Redis' clock.
      expect(named[0]!.retry!.nextRetryAt).toBeGreaterThanOrEqual(readAt + 600_000);
      expect(named[0]!.retry!.nextRetryAt).toBeLessThan(readAt + 660_000);
      // Without the flag the default retry consumer (`retry`) is looked for: plain rows.
      expect((await list()).map((entry) => [entry.consumer, entry.retry])).toEqual([['backoff', undefined], ['w1', undefined]]);
      expect(expectOneLineFailure(await cli(['pending', 'jobs', 'g', '--entries', '--retry-consumer', '', '--url', closedUrl]), 2)).toContain('--retry-consumer');
    });

    // `{orders}:partitions` holding a count outside 1..1024 once crashed `info orders` (10^10:
    // "Invalid array length") or ran it out of heap (10^8, after seconds): now one line naming the key.
    it('invalid partition metadata: every command on the stream fails on one line naming the key, exit 1', async () => {
      const commands = [
        ['info', 'orders'],
        ['info', 'orders', '--group', 'billing'],
        ['pending', 'orders', 'billing'],
        ['pending', 'orders', 'billing', '--entries'],
        ['claim', 'orders', 'billing', 'c1', '--min-idle-time', '1000'],
        ['ack', 'orders', 'billing', '1-0'],
        ['dlq', 'list', 'orders'],
        ['dlq', 'purge', 'orders', '--all'],
      ];
      for (const [value, detail] of [
        ['10000000000', 'count 10000000000 is outside 1..1024'],
        ['100000000', 'count 100000000 is outside 1..1024'],
        ['x8', '"x8" is not a partition count (an integer from 1 to 1024)'],
      ] as const) {
        await redis.set('{orders}:partitions', value);
        for (let i = 0; i < commands.length; i += 4) {
          const batch = commands.slice(i, i + 4);
          const runs = await Promise.all(batch.map((command) => cli([...command, '--url', server.url])));
          runs.forEach((run, j) => {
            const name = `${batch[j]!.join(' ')} with ${value}`;
            expect([name, run.code, run.stdout]).toEqual([name, 1, '']);
            expect([name, run.stderr]).toEqual([name, expect.stringMatching(new RegExp(`^error: invalid partition metadata in "\\{orders\\}:partitions": ${detail.replace(/[.()]/g, '\\$&')}[^\n]*\n$`))]);
          });
        }
      }
    });
  });
});
