import { beforeEach, describe, expect, it } from 'vitest';
import { moveToDeadLetter } from '../../src/recovery/dead-letter-move.js';
import { releaseForRetry } from '../../src/recovery/retry-release.js';
import type { CliIo } from '../../src/cli/io.js';
import { runCli } from '../../src/cli/program.js';
import { formatDuration } from '../../src/cli/human-units.js';
import { topRows } from '../../src/cli/top/top-rows.js';
import { partitionedSamples } from '../../src/cli/top/partitioned-sample.js';
import type { StreamSample, TopSample } from '../../src/cli/top/top-sampler.js';
import { topView } from '../../src/cli/views/top.view.js';
import { SHOWN_DURATION } from '../helpers/shown-duration.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

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
    expect(entries[1]).toMatch(new RegExp(`^1700000000001-0  w1 +${SHOWN_DURATION} +1$`));
    expect(entries[2]).toMatch(new RegExp(`^1700000000002-0  w1 +${SHOWN_DURATION} +1$`));
  });

  it('pending --entries: an entry waiting for its retry adds its next retry time and last error', async () => {
    const entries = [{ id: '1700000000001-0', deliveryCount: 1, delayMs: 60_000, error: 'Error: downstream\n503' }];
    await releaseForRetry(redis.client, { stream: 'orders', group: 'billing', consumer: 'w1', retryConsumer: 'backoff', entries });
    const lines = (await run(['pending', 'orders', 'billing', '--entries', '--retry-consumer', 'backoff'])).trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID {15}CONSUMER {2,}IDLE {2}DELIVERIES {2}NEXT RETRY {16}LAST ERROR$/);
    expect(lines[1]).toMatch(new RegExp(String.raw`^1700000000001-0  backoff +${SHOWN_DURATION} +1  \d{4}-\d\d-\d\dT[\d:.]+Z  Error: downstream 503$`));
    expect(lines[2]).toMatch(new RegExp(`^1700000000002-0  w1 +${SHOWN_DURATION} +1$`));
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
      { stream: 'orders', group: 'billing', length: 3, inPerSecond: null, outPerSecond: null, lag: counts ? 1 : null, pending: 2, oldestPendingIdleMs: expect.any(Number), consumers: 1, deadLetters: 0, delayedHeld: 0, delayedDue: 0, paused: false },
      { stream: 'orders', group: 'nope', length: 3, inPerSecond: null, outPerSecond: null, lag: null, pending: null, oldestPendingIdleMs: null, consumers: null, deadLetters: 0, delayedHeld: 0, delayedDue: 0, paused: false, note: 'no such group' },
    ]);
    expect(second!.rows[0]).toMatchObject(counts ? { inPerSecond: 0, outPerSecond: 0 } : { inPerSecond: null, outPerSecond: null });
  });
});

/** Control characters a terminal may act on (C0, DEL, C1); a line break between lines is the only one allowed. */
// oxlint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

describe('hostile names and error text from Redis are shown, not obeyed, at a terminal', () => {
  const redis = useRedisServer();
  // What a stranger with write access to Redis can name things: clear the screen, set the window
  // title, an 8-bit CSI (C1), DEL.
  const group = 'billing\u001b[2J\u001b[H';
  const consumer = 'w1\u001b]0;pwned\u0007';
  const other = 'csi\u009b2J\u007f';
  const shownGroup = 'billing\\x1b[2J\\x1b[H';
  const shownConsumer = 'w1\\x1b]0;pwned\\x07';
  const shownOther = 'csi\\x9b2J\\x7f';

  beforeEach(async () => {
    const client = redis.client;
    await client.flushall();
    await client.xgroup('CREATE', 'orders', group, '0', 'MKSTREAM');
    await client.xgroup('CREATE', 'orders', other, '0');
    for (let i = 1; i <= 3; i++) await client.xadd('orders', `${1_700_000_000_000 + i}-0`, 'n', String(i));
    await client.xreadgroup('GROUP', group, consumer, 'COUNT', 2, 'STREAMS', 'orders', '>');
  });

  async function run(args: string[], atTerminal = true) {
    const io = capture(atTerminal);
    const code = await runCli([...args, '--url', redis.server.url], io);
    expect(io.err).toBe('');
    expect(code).toBe(0);
    return io.out;
  }

  async function countsReads(): Promise<boolean> {
    return ((await redis.client.call('XINFO', 'STREAM', 'orders')) as unknown[]).includes('entries-added');
  }

  it('info: group and consumer names escaped (\\x1b, \\x07, \\x9b, \\x7f), columns aligned', async () => {
    const counts = await countsReads();
    const out = await run(['info', 'orders', '--group', group]);
    expect(out).not.toMatch(RAW_CONTROL);
    const lines = out.split('\n');
    expect(lines.slice(2, 5)).toEqual([
      'GROUP                 CONSUMERS  PENDING  LAG  ENTRIES READ  LAST DELIVERED',
      `${shownGroup}          1        2    ${counts ? 1 : '-'}             ${counts ? 2 : '-'}  1700000000002-0`,
      `${shownOther}                 0        0    ${counts ? 3 : '-'}             -  0-0`,
    ]);
    // The heading names the group too.
    expect(lines[6]).toBe(`consumers of ${shownGroup}:`);
    expect(lines[7]).toMatch(/^CONSUMER {12}PENDING +IDLE  INACTIVE$/);
    expect(lines[8]).toMatch(new RegExp(`^${escapeRegExp(shownConsumer)} {8}2 +\\S+ +\\S+$`));
    expect(lines[8]!.length).toBe(lines[7]!.length);
  });

  it('pending: the heading and the consumers table escape them', async () => {
    expect(await run(['pending', 'orders', group])).toBe(
      `group ${shownGroup} of orders: 2 pending (1700000000001-0 .. 1700000000002-0)\n\nCONSUMER            PENDING\n${shownConsumer}        2\n`,
    );
    const entries = (await run(['pending', 'orders', group, '--entries'])).trimEnd().split('\n');
    expect(entries.join('\n')).not.toMatch(RAW_CONTROL);
    // IDLE is right-aligned: its header moves right when the idle time shown is wider ("850ms").
    expect(entries[0]).toMatch(/^ID {15}CONSUMER {12,}IDLE {2}DELIVERIES$/);
    expect(entries[1]).toMatch(new RegExp(`^1700000000001-0  ${escapeRegExp(shownConsumer)} +${SHOWN_DURATION} +1$`));
    expect(entries[1]!.length).toBe(entries[0]!.length);
  });

  it('dlq list: colour codes in the error text are shown, not applied', async () => {
    const error = '\u001b[31mboom\u001b[0m \u009b1m\u007f';
    await moveToDeadLetter(redis.client, { stream: 'orders', group, ids: ['1700000000001-0'], reason: 'manual', error });
    const out = await run(['dlq', 'list', 'orders']);
    expect(out).not.toMatch(RAW_CONTROL);
    const lines = out.trimEnd().split('\n');
    expect(lines[0]).toBe(`DEAD-LETTER ID   SOURCE ID        GROUP                 CONSUMER            DELIVERIES  REASON  AT                        ERROR`);
    expect(lines[1]).toMatch(
      new RegExp(`^\\d+-0  1700000000001-0  ${escapeRegExp(shownGroup)}  ${escapeRegExp(shownConsumer)}           1  manual  \\S+  ${escapeRegExp('\\x1b[31mboom\\x1b[0m \\x9b1m\\x7f')}$`),
    );
  });

  it('--json and piped output keep the exact names (JSON escapes every control character)', async () => {
    for (const out of [await run(['info', 'orders', '--group', group, '--json']), await run(['pending', 'orders', group], false)]) {
      expect(out).not.toMatch(RAW_CONTROL);
      expect(out).toContain('\\u001b');
    }
    const info = JSON.parse(await run(['info', 'orders', '--group', group, '--json'])) as { groups: { name: string }[]; consumers: { name: string }[] };
    expect(info.groups.map((entry) => entry.name).sort()).toEqual([group, other].sort());
    expect(info.consumers.map((entry) => entry.name)).toEqual([consumer]);
    const top = JSON.parse((await run(['top', 'orders', '--iterations', '1'], false)).trim()) as { rows: { group: string }[] };
    expect(top.rows.map((row) => row.group).sort()).toEqual([group, other].sort());
  });

  it('bidi overrides and zero-width characters are shown as \\uNNNN: a name cannot pass for another', async () => {
    // "billing" with a zero-width space; "audit" then a right-to-left override that shows "gnillib" as "billing".
    const lookalike = 'bill\u200bing';
    const reversed = 'audit\u202egnillib';
    await redis.client.xgroup('CREATE', 'orders', lookalike, '0');
    await redis.client.xgroup('CREATE', 'orders', reversed, '0');
    const out = await run(['info', 'orders']);
    expect(out).not.toMatch(/[\u200b\u202e]/);
    expect(out).toContain('bill\\u200bing');
    expect(out).toContain('audit\\u202egnillib');
    const json = await run(['info', 'orders', '--json']);
    expect(json).not.toMatch(/[\u200b\u202e]/);
    const names = (JSON.parse(json) as { groups: { name: string }[] }).groups.map((entry) => entry.name);
    expect(names).toContain(lookalike);
    expect(names).toContain(reversed);
  });

  it('a failure line names the group escaped', async () => {
    const io = capture(true);
    const code = await runCli(['pending', 'orders', 'nope\u001b[2J\u009b', '--entries', '--url', redis.server.url], io);
    expect(code).toBe(1);
    expect(io.err).not.toMatch(RAW_CONTROL);
    expect(io.err).toContain('nope\\x1b[2J\\x9b');
    expect(io.err.trimEnd().split('\n')).toHaveLength(1);
  });

  it("top's frame: every line escaped, before it is cut to the terminal's width", () => {
    const row = { length: 3, inPerSecond: null, outPerSecond: null, lag: 1, pending: 2, oldestPendingIdleMs: 1500, consumers: 1, deadLetters: 0, delayedHeld: 0, delayedDue: 0, paused: false };
    const frame = topView(
      { source: 'redis://127.0.0.1:1/\u001b]0;x\u0007', intervalMs: 1_000, at: 0, rows: [{ stream: 'orders\u009b', group, ...row }, { stream: 'orders\u009b', group: other, ...row }] },
      120,
    );
    expect(frame).not.toMatch(RAW_CONTROL);
    const lines = frame.trimEnd().split('\n');
    expect(lines[0]).toContain('redis://127.0.0.1:1/\\x1b]0;x\\x07 · every');
    expect(lines[2]).toMatch(/^STREAM {6}GROUP {17}LENGTH/);
    expect(lines[3]).toMatch(new RegExp(`^orders\\\\x9b  ${escapeRegExp(shownGroup)}       3`));
    expect(lines[4]).toMatch(new RegExp(`^orders\\\\x9b  ${escapeRegExp(shownOther)} {14}3`));
    expect(lines.every((line) => line.length <= 120)).toBe(true);
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('top figures and units', () => {
  const sample = (at: number, added: number, read: number, pending: number): TopSample => ({
    at,
    streams: [{ key: 'orders', exists: true, length: added, entriesAdded: added, deadLetters: 4, delayed: { held: 5, due: 1 }, groups: [{ name: 'billing', consumers: 2, pending, lag: added - read, entriesRead: read, oldestPendingIdleMs: 1500 }], pausedGroups: new Set<string>() }],
  });

  it('rates: entries added per second, entries acknowledged (read minus pending) per second', () => {
    const [row] = topRows(sample(12_000, 130, 110, 10), sample(10_000, 100, 80, 20));
    expect(row).toEqual({
      stream: 'orders', group: 'billing', length: 130, inPerSecond: 15, outPerSecond: 20, lag: 20, pending: 10, oldestPendingIdleMs: 1500, consumers: 2, deadLetters: 4, delayedHeld: 5, delayedDue: 1, paused: false,
    });
  });

  it("delayed counts: a partitioned stream's total sums its partitions' held and due; unknown when a partition could not be counted", () => {
    const partition = (key: string, delayed: { held: number; due: number } | null): StreamSample => ({ key, exists: key !== 'orders:p2', length: 1, entriesAdded: 1, deadLetters: 0, delayed, groups: [], pausedGroups: new Set<string>() });
    const counted = partitionedSamples('orders', [partition('orders:p0', { held: 3, due: 1 }), partition('orders:p1', { held: 4, due: 0 }), partition('orders:p2', { held: 2, due: 2 })]);
    // A partition whose stream does not exist yet still holds entries (its first promotion creates it).
    expect(counted.map((sample) => [sample.key, sample.delayed])).toEqual([
      ['orders:p0', { held: 3, due: 1 }],
      ['orders:p1', { held: 4, due: 0 }],
      ['orders:p2', { held: 2, due: 2 }],
      ['orders (total)', { held: 9, due: 3 }],
    ]);
    expect(partitionedSamples('orders', [partition('orders:p0', { held: 3, due: 1 }), partition('orders:p1', null)]).at(-1)!.delayed).toBeNull();
    const rows = topRows({ at: 0, streams: [partition('orders:p2', { held: 2, due: 2 }), partition('orders:p1', null)] });
    expect(rows.map((row) => [row.delayedHeld, row.delayedDue, row.note])).toEqual([[2, 2, 'no such stream'], [null, null, 'no groups']]);
  });

  it('durations', () => {
    expect([850, 12_300, 245_000, 7_380_000, 273_600_000, null].map(formatDuration)).toEqual(['850ms', '12.3s', '4m05s', '2h03m', '3d04h', '-']);
    // Just below a unit's end: still that unit, cut (a rounded 59_960 ms was `60.0s`, 999.6 ms `1000ms`).
    expect([999.6, 9_999, 59_960, 3_599_999, 86_399_999].map(formatDuration)).toEqual(['999ms', '9.9s', '59.9s', '59m59s', '23h59m']);
  });
});
