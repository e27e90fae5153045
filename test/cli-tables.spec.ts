import { beforeEach, describe, expect, it } from 'vitest';
import { moveToDeadLetter } from '../src/recovery/dead-letter-move.js';
import { releaseForRetry } from '../src/recovery/retry-release.js';
import type { CliIo } from '../src/cli/io.js';
import { runCli } from '../src/cli/run.js';
import { formatDuration } from '../src/cli/human-units.js';
import { topRows } from '../src/cli/top/top-rows.js';
import type { TopSample } from '../src/cli/top/top-sampler.js';
import { useRedisServer } from './helpers/use-redis-server.js';

/** Captures what the CLI prints; `terminal` set means "stdout is a terminal". */
function capture(atTerminal: boolean): CliIo & { out: string; err: string } {
  const io = {
    out: '',
    err: '',
    stdout: (text: string) => void (io.out += text),
    stderr: (text: string) => void (io.err += text),
    env: {},
    readStdin: async () => '',
    terminal: atTerminal ? ({ columns: 200 } as NodeJS.WriteStream) : undefined,
    onInterrupt: () => () => undefined,
  };
  return io;
}

describe('CLI output at a terminal: aligned tables; JSON otherwise', () => {
  const redis = useRedisServer();

  beforeEach(async () => {
    const client = redis.client;
    await client.flushall();
    await client.xgroup('CREATE', 'orders', 'billing', '0', 'MKSTREAM');
    await client.xgroup('CREATE', 'orders', 'audit-long-name', '0');
    for (let i = 1; i <= 3; i++) await client.xadd('orders', `${1_700_000_000_000 + i}-0`, 'n', String(i));
    await client.xreadgroup('GROUP', 'billing', 'w1', 'COUNT', 2, 'STREAMS', 'orders', '>');
  });

  async function run(args: string[], atTerminal = true) {
    const io = capture(atTerminal);
    const code = await runCli([...args, '--url', redis.server.url], io);
    expect(io.err).toBe('');
    expect(code).toBe(0);
    return io.out;
  }

  /** Redis 7.0+ counts added and read entries (and so lag); 6.2 does not, and the CLI shows `-`. */
  async function countsReads(): Promise<boolean> {
    return ((await redis.client.call('XINFO', 'STREAM', 'orders')) as unknown[]).includes('entries-added');
  }

  it('info: the stream line and the groups table', async () => {
    const counts = await countsReads();
    // A group created on an empty stream has no read counter until it reads (Redis shows nil).
    expect(await run(['info', 'orders'])).toBe(
      [
        `stream orders: 3 entries (1700000000001-0 .. 1700000000003-0)${counts ? ', 3 added in all' : ''}, 2 group(s)`,
        '',
        'GROUP            CONSUMERS  PENDING  LAG  ENTRIES READ  LAST DELIVERED',
        `audit-long-name          0        0    ${counts ? 3 : '-'}             -  0-0`,
        `billing                  1        2    ${counts ? 1 : '-'}             ${counts ? 2 : '-'}  1700000000002-0`,
        '',
      ].join('\n'),
    );
  });

  it('pending: summary and entries', async () => {
    expect(await run(['pending', 'orders', 'billing'])).toBe(
      'group billing of orders: 2 pending (1700000000001-0 .. 1700000000002-0)\n\nCONSUMER  PENDING\nw1              2\n',
    );
    const entries = (await run(['pending', 'orders', 'billing', '--entries'])).split('\n');
    // IDLE is right-aligned: its width follows the longest idle time shown ("900ms", "12.5s").
    expect(entries[0]).toMatch(/^ID {15}CONSUMER {2,}IDLE {2}DELIVERIES$/);
    expect(entries[1]).toMatch(/^1700000000001-0  w1 +\d+(ms|\.\ds) +1$/);
    expect(entries[2]).toMatch(/^1700000000002-0  w1 +\d+(ms|\.\ds) +1$/);
  });

  it('pending --entries: an entry waiting for its retry adds its next retry time and last error', async () => {
    const entries = [{ id: '1700000000001-0', deliveryCount: 1, delayMs: 60_000, error: 'Error: downstream\n503' }];
    await releaseForRetry(redis.client, { stream: 'orders', group: 'billing', consumer: 'w1', retryConsumer: 'backoff', entries });
    const lines = (await run(['pending', 'orders', 'billing', '--entries', '--retry-consumer', 'backoff'])).trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID {15}CONSUMER {2,}IDLE {2}DELIVERIES {2}NEXT RETRY {16}LAST ERROR$/);
    expect(lines[1]).toMatch(/^1700000000001-0  backoff +\d+(ms|\.\ds) +1  \d{4}-\d\d-\d\dT[\d:.]+Z  Error: downstream 503$/);
    expect(lines[2]).toMatch(/^1700000000002-0  w1 +\d+(ms|\.\ds) +1$/);
  });

  it('dlq list: one row per dead letter', async () => {
    await moveToDeadLetter(redis.client, { stream: 'orders', group: 'billing', ids: ['1700000000001-0'], reason: 'manual', error: 'quantity\nover limit' });
    const lines = (await run(['dlq', 'list', 'orders'])).trimEnd().split('\n');
    expect(lines[0]).toBe('DEAD-LETTER ID   SOURCE ID        GROUP    CONSUMER  DELIVERIES  REASON  AT                        ERROR');
    expect(lines[1]).toMatch(/^\d+-0  1700000000001-0  billing  w1                 1  manual  \d{4}-\d\d-\d\dT[\d:.]+Z  quantity over limit$/);
    expect(lines).toHaveLength(2);
  });

  it('--json at a terminal, and no terminal at all, print the JSON unchanged', async () => {
    const atTerminal = await run(['pending', 'orders', 'billing', '--json']);
    const piped = await run(['pending', 'orders', 'billing'], false);
    expect(piped).toBe(atTerminal);
    expect(JSON.parse(piped)).toMatchObject({ key: 'orders', group: 'billing', count: 2 });
  });

  it('top without a terminal prints one JSON line per sample, with rates from the second on', async () => {
    const lines = (await run(['top', 'orders', '--group', 'billing', '--group', 'nope', '--iterations', '2', '--interval', '100'], false)).trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    const counts = await countsReads();
    const [first, second] = lines.map((line) => JSON.parse(line) as { rows: Record<string, unknown>[] });
    expect(first!.rows).toEqual([
      { stream: 'orders', group: 'billing', length: 3, inPerSecond: null, outPerSecond: null, lag: counts ? 1 : null, pending: 2, oldestPendingIdleMs: expect.any(Number), consumers: 1, deadLetters: 0 },
      { stream: 'orders', group: 'nope', length: 3, inPerSecond: null, outPerSecond: null, lag: null, pending: null, oldestPendingIdleMs: null, consumers: null, deadLetters: 0, note: 'no such group' },
    ]);
    expect(second!.rows[0]).toMatchObject(counts ? { inPerSecond: 0, outPerSecond: 0 } : { inPerSecond: null, outPerSecond: null });
  });
});

describe('top figures and units', () => {
  const sample = (at: number, added: number, read: number, pending: number): TopSample => ({
    at,
    streams: [{ key: 'orders', exists: true, length: added, entriesAdded: added, deadLetters: 4, groups: [{ name: 'billing', consumers: 2, pending, lag: added - read, entriesRead: read, oldestPendingIdleMs: 1500 }] }],
  });

  it('rates: entries added per second, entries acknowledged (read minus pending) per second', () => {
    const [row] = topRows(sample(12_000, 130, 110, 10), sample(10_000, 100, 80, 20));
    expect(row).toEqual({
      stream: 'orders', group: 'billing', length: 130, inPerSecond: 15, outPerSecond: 20, lag: 20, pending: 10, oldestPendingIdleMs: 1500, consumers: 2, deadLetters: 4,
    });
  });

  it('durations', () => {
    expect([850, 12_300, 245_000, 7_380_000, 273_600_000, null].map(formatDuration)).toEqual(['850ms', '12.3s', '4m05s', '2h03m', '3d04h', '-']);
  });
});
