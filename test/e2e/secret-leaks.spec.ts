import { spawn } from 'node:child_process';
import { inspect } from 'node:util';
import { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { StreamClaimService } from '../../src/module/claim-services.js';
import { StreamInspectionService } from '../../src/module/claim-services.js';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { DeadLetterService } from '../../src/recovery/dead-letter.service.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { compiledPath, ensureCompiled } from '../helpers/compiled.js';
import { freePort } from '../helpers/redis-server.js';
import { runCli } from '../helpers/run-cli.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/**
 * No password ever leaves the package: errors reaching user code (every printed form: util.inspect,
 * JSON.stringify, message, stack, the cause chain), log lines, events, CLI stdout and stderr.
 * The wrong password carries a marker (`LEAKED`) that must appear nowhere.
 */
const MARKER = 'LEAKED';
const WRONG = `${MARKER}-Wr0ng:pa@ss`;
const ENCODED = encodeURIComponent(WRONG);
/** A wrong password with a raw "@", a space and ":" in it, unencoded in the URL. */
const RAW_WRONG = `pa@ss ${MARKER}:x@y`;
const UNKNOWN_HOST = 'nonexistent.invalid';

/** Everything a user (or Node, for an uncaught error) could print of `value`. */
function printedForms(value: unknown): string {
  const forms: string[] = [inspect(value, { depth: Infinity, showHidden: true }), json(value), String(value)];
  const seen = new Set<unknown>();
  for (let error = value; error instanceof Error && !seen.has(error); error = error.cause) {
    seen.add(error);
    forms.push(error.message, error.stack ?? '', inspect(error), json(error));
  }
  return forms.join('\n');
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}

function expectNoLeak(value: unknown): void {
  const printed = printedForms(value);
  expect(printed).not.toContain(MARKER);
  expect(printed).not.toContain(ENCODED);
}

/** Settles `promise` (resolve or reject) or fails after `ms`: a hang is a failure. */
async function failureOf(promise: Promise<unknown>, ms = 15_000): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms);
  });
  try {
    await Promise.race([promise, hang]);
  } catch (error) {
    if ((error as Error).message === `still pending after ${ms} ms`) throw error;
    return error;
  } finally {
    clearTimeout(timer);
  }
  throw new Error('expected a failure, got success');
}

/** Every Nest log line of the test, as printed. */
const logLines: string[] = [];
const captureLogger = Object.fromEntries(
  ['log', 'error', 'warn', 'debug', 'verbose', 'fatal'].map((level) => [level, (...args: unknown[]) => logLines.push(printedForms(args))]),
);

describe('secrets never leave the package', () => {
  const redis = useRedisServer({ password: 'the-right-password' });
  const urls: Record<string, string> = {};

  beforeAll(async () => {
    urls.wrongPassword = `redis://default:${ENCODED}@127.0.0.1:${redis.server.port}`;
    urls.refused = `redis://default:${ENCODED}@127.0.0.1:${await freePort()}`;
    urls.unknownHost = `redis://default:${ENCODED}@${UNKNOWN_HOST}:6390`;
    // Written raw, as users do: ioredis reads the password up to the last "@", spaces included.
    urls.rawWrongPassword = `redis://default:${RAW_WRONG}@127.0.0.1:${redis.server.port}`;
    urls.rawRefused = `redis://:${RAW_WRONG}@127.0.0.1:${await freePort()}/0`;
  });
  beforeEach(() => {
    logLines.length = 0;
    Logger.overrideLogger(captureLogger as never);
  });
  afterEach(() => {
    Logger.overrideLogger(true as never);
    for (const line of logLines) expect(line).not.toContain(MARKER);
  });

  // Each case its own server object: they wait out startupTimeout together.
  describe.concurrent.each(['wrongPassword', 'refused', 'unknownHost', 'rawWrongPassword', 'rawRefused'])('server: listen() fails (%s)', (kind) => {
    it('the listen callback error and the error events carry no password', async () => {
      const server = new RedisStreamsServer({ connection: urls[kind], group: 'g', consumer: 'c', recovery: false, startupTimeout: 1_000 });
      server.addHandler('orders', async () => undefined, true);
      const events: unknown[] = [];
      server.on('error', (error) => events.push(error));
      const error = await failureOf(new Promise((resolve, reject) => void server.listen((e) => (e ? reject(e) : resolve(undefined)))));
      await server.close();
      expect(printedForms(error)).toMatch(/WRONGPASS|connection refused|host not found/);
      expectNoLeak(error);
      for (const event of events) expectNoLeak(event);
    });
  });

  describe.each(['wrongPassword', 'refused', 'unknownHost', 'rawWrongPassword', 'rawRefused'])('client, %s', (kind) => {
    it('emit and send rejections and error events carry no password', async () => {
      const client = new RedisStreamsClient({ connection: urls[kind], commandTimeout: 2_000 });
      const events: unknown[] = [];
      client.on('error', (error) => events.push(error));
      const emitted = await failureOf(lastValueFrom(client.emit('orders', { n: 1 })));
      const sent = await failureOf(lastValueFrom(client.send('orders', { n: 1 })));
      await client.close();
      expectNoLeak(emitted);
      expectNoLeak(sent);
      for (const event of events) expectNoLeak(event);
    });
  });

  describe.each(['wrongPassword', 'refused', 'unknownHost', 'rawWrongPassword', 'rawRefused'])('services on a connection that fails (%s)', (kind) => {
    let connection: Redis;
    beforeEach(() => {
      connection = new Redis(urls[kind] as string, { lazyConnect: true, maxRetriesPerRequest: 0 });
      connection.on('error', () => undefined);
    });
    afterEach(() => connection.disconnect());

    it('StreamClaimService.claim / ack and the inspection service reject without the password', async () => {
      const claims = new StreamClaimService(connection);
      const inspection = new StreamInspectionService(connection);
      expectNoLeak(await failureOf(claims.claim({ key: 'orders', group: 'g', consumer: 'r', minIdleTime: 1 })));
      expectNoLeak(await failureOf(claims.ack('orders', 'g', ['1-0'])));
      expectNoLeak(await failureOf(inspection.pendingSummary('orders', 'g')));
    });

    it('DeadLetterService list / redrive / purge / move reject without the password', async () => {
      const deadLetters = new DeadLetterService(connection);
      expectNoLeak(await failureOf(deadLetters.list('orders')));
      expectNoLeak(await failureOf(deadLetters.redrive('orders', ['1-0'])));
      expectNoLeak(await failureOf(deadLetters.purge('orders', 'all')));
      expectNoLeak(await failureOf(deadLetters.moveToDeadLetter({ stream: 'orders', group: 'g', ids: ['1-0'], reason: 'max_deliveries' })));
    });
  });

  describe('CLI: every command, stdout and stderr', () => {
    const CLI = compiledPath('src/cli/main.ts');
    const COMMANDS = [
      ['claim', 'orders', 'g', 'r', '--min-idle-time', '1000'],
      ['ack', 'orders', 'g', '1-0'],
      ['pending', 'orders', 'g'],
      ['info', 'orders'],
      ['dlq', 'list', 'orders'],
      ['dlq', 'redrive', 'orders', '1-0'],
      ['dlq', 'purge', 'orders', '--all'],
    ];
    beforeAll(ensureCompiled, 300_000);

    function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; output: string }> {
      return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`CLI did not finish within 20 s: ${args.join(' ')}`));
        }, 20_000);
        child.on('close', (code) => {
          clearTimeout(timer);
          resolve({ code, output });
        });
      });
    }

    /** Every command with a wrong password (the reported leak), and every other failure with one command. */
    const cases = (): [string[], NodeJS.ProcessEnv][] => {
      const refusedPort = new URL(urls.refused as string).port;
      return [
        ...COMMANDS.map((command): [string[], NodeJS.ProcessEnv] => [[...command, '--url', urls.wrongPassword as string], {}]),
        [[...COMMANDS[0]!, '--url', urls.refused as string], {}],
        [[...COMMANDS[3]!, '--url', urls.unknownHost as string], {}],
        [[...COMMANDS[4]!, '--url', `:${WRONG}@127.0.0.1:${refusedPort}`], {}],
        [COMMANDS[2]!, { REDIS_URL: `user:${WRONG}@127.0.0.1:${redis.server.port}` }],
        [COMMANDS[5]!, { REDIS_URL: `redis://127.0.0.1:${redis.server.port}/?password=${ENCODED}` }],
      ];
    };

    it('fails on one line with exit 1 or 2, and prints no password, in every case', async () => {
      const runs: { name: string; code: number | null; output: string }[] = [];
      const all = cases();
      // Four at a time: the machine is shared.
      for (let i = 0; i < all.length; i += 4) {
        const batch = all.slice(i, i + 4);
        const results = await Promise.all(batch.map(([args, env]) => run(args, env)));
        results.forEach((result, j) => runs.push({ name: `${batch[j]![0].join(' ')} ${JSON.stringify(batch[j]![1])}`, ...result }));
      }
      for (const { name, code, output } of runs) {
        expect([name, code]).toEqual([name, expect.toSatisfy((c: number) => c === 1 || c === 2)]);
        expect([name, output]).not.toEqual([name, expect.stringContaining(MARKER)]);
        expect([name, output]).not.toEqual([name, expect.stringContaining(ENCODED)]);
        expect([name, output.trimEnd().split('\n').length]).toEqual([name, 1]);
      }
    }, 120_000);
  });
});

/**
 * Passwords that ioredis reads with a raw "@" (its userinfo ends at the last "@" before the host),
 * a space or a ":", and ones with a raw "/", "#" or "?" that end its authority early (it rejects
 * the URL): no part of them is printed, neither by a failed connect nor by `top`'s header.
 */
describe('CLI: passwords with "@", spaces and URL delimiters', () => {
  // requirepass (the default user) with a raw "@"; an ACL user whose password has "@", a space and ":".
  const TAIL = 'hunter2@TAILSECRET';
  const SPACE = 'open SPACESECRET@x:y';
  const redis = useRedisServer({ password: TAIL });
  const MARKERS = ['TAILSECRET', 'SPACESECRET', 'SLASHSECRET', 'HASHSECRET', 'QUERYSECRET'];

  beforeAll(async () => {
    await ensureCompiled();
    await redis.client.acl('SETUSER', 'ops', 'on', `>${SPACE}`, '~*', '&*', '+@all');
    await redis.client.xgroup('CREATE', 'orders', 'billing', '0', 'MKSTREAM');
  }, 300_000);

  function expectNoMarker(name: string, output: string): void {
    for (const marker of MARKERS) expect([name, output]).not.toEqual([name, expect.stringContaining(marker)]);
  }

  it("top's header shows the URL with the password masked (the connection works)", async () => {
    const port = redis.server.port;
    for (const [url, shown] of [
      [`redis://:${TAIL}@127.0.0.1:${port}`, `redis://:***@127.0.0.1:${port}`],
      [`redis://ops:${SPACE}@127.0.0.1:${port}/0`, `redis://ops:***@127.0.0.1:${port}/0`],
    ] as const) {
      const run = await runCli(['top', 'orders', '--iterations', '1', '--url', url], {}, { nodeArgs: ['--import', './test/fixtures/as-terminal.mjs'] });
      expect([url, run.code, run.stderr]).toEqual([url, 0, '']);
      expect(run.stdout).toContain(`nestjs-redis-streams top · ${shown} · every 1.0s`);
      expect(run.stdout).toMatch(/^orders +billing/m);
      expectNoMarker(url, run.stdout);
    }
  }, 60_000);

  it('a failed connect or a URL ioredis refuses fails on one line without the password', async () => {
    const port = redis.server.port;
    const refused = await freePort();
    const cases: [string, RegExp][] = [
      [`redis://:wrong@TAILSECRET@127.0.0.1:${port}`, /WRONGPASS/],
      [`redis://ops:not open SPACESECRET@x:y@127.0.0.1:${port}`, /WRONGPASS/],
      [`redis://:${TAIL}@127.0.0.1:${refused}`, /connection refused/],
      [`redis://ops:${SPACE}@127.0.0.1:${refused}/0`, /connection refused/],
      [`:${TAIL}@127.0.0.1:${refused}`, /must be a redis:\/\//],
      [`redis://ops:pa/SLASHSECRET@127.0.0.1:${port}`, /not a valid URL/],
      [`redis://ops:12/SLASHSECRET@127.0.0.1:${port}`, /database number/],
      [`redis://ops:pa#HASHSECRET@127.0.0.1:${port}`, /not a valid URL/],
      [`redis://ops:pa?QUERYSECRET@127.0.0.1:${port}`, /not a valid URL/],
      [`redis+sentinel://:${TAIL}@127.0.0.1:${refused}/mymaster`, /sentinels are unreachable/],
    ];
    for (let i = 0; i < cases.length; i += 4) {
      const batch = cases.slice(i, i + 4);
      const runs = await Promise.all(batch.map(([url]) => runCli(['info', 'orders', '--url', url])));
      runs.forEach((run, j) => {
        const [url, why] = batch[j]!;
        const output = run.stdout + run.stderr;
        expect([url, run.code]).toEqual([url, expect.toSatisfy((c: number) => c === 1 || c === 2)]);
        expect([url, output.trimEnd().split('\n').length]).toEqual([url, 1]);
        expect([url, output]).toEqual([url, expect.stringMatching(why)]);
        expectNoMarker(url, output);
      });
    }
  }, 120_000);
});

afterAll(() => Logger.overrideLogger(true as never));

describe("recovery's log lines pass the server's redactor", () => {
  const secret = `${MARKER}-right`;
  const redis = useRedisServer({ password: secret });
  const lines: string[] = [];
  const capture = Object.fromEntries(['log', 'error', 'warn', 'debug', 'verbose', 'fatal'].map((level) => [level, (...args: unknown[]) => lines.push(printedForms(args))]));
  beforeEach(() => Logger.overrideLogger(capture as never));
  afterEach(() => Logger.overrideLogger(true as never));

  it('a recovered entry of a stream whose name holds the password is logged with the password masked', async () => {
    const pattern = `orders-${secret}`;
    await redis.client.xgroup('CREATE', pattern, 'g', '0', 'MKSTREAM');
    await redis.client.xadd(pattern, '*', 'data', '{}');
    // Delivered to a consumer that never acks it: recovery claims it once it is idle.
    await redis.client.xreadgroup('GROUP', 'g', 'gone', 'COUNT', 1, 'STREAMS', pattern, '>');
    const server = new RedisStreamsServer({
      connection: `redis://default:${secret}@127.0.0.1:${redis.server.port}`,
      group: 'g',
      consumer: 'c',
      streamPrefix: '',
      recovery: { minIdleTime: 50, interval: 100 },
    });
    let handled = 0;
    server.addHandler(pattern, async () => void handled++, true);
    await new Promise<void>((resolve, reject) => void server.listen((error) => (error ? reject(error) : resolve())));
    try {
      const deadline = Date.now() + 15_000;
      while (!lines.some((line) => line.includes('recovered 1 idle entries')) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      await server.close();
    }
    const recovered = lines.filter((line) => line.includes('recovered 1 idle entries'));
    expect(recovered.length).toBeGreaterThan(0);
    expect(recovered[0]).toContain('"orders-***"');
    expect(handled).toBe(1);
    for (const line of lines) expect(line).not.toContain(MARKER);
  });
});
