import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord, type RedisStreamsRecordOptions } from '../../src/client/redis-streams-record.js';
import { promoteDelayedNow } from '../../src/delayed/delayed-inspection.js';
import { pauseGroup, resumeGroup } from '../../src/flow/pause-state.js';
import { partitionIndexOf, partitionsMetadataKey } from '../../src/partitions/partition-keys.js';
import { compiledPath, ensureCompiled } from '../helpers/compiled.js';
import { RedisServerProcess } from '../helpers/redis-server.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const CLI = resolve(compiledPath('src/cli/main.ts'));
const TMUX = spawnSync('tmux', ['-V']).status === 0;
// A private tmux server (its own socket), so the test never touches a user's sessions.
const SOCKET = `nrs-top-${process.pid}`;
const SESSION = 'top';

function tmux(...args: string[]): string {
  const run = spawnSync('tmux', ['-L', SOCKET, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`tmux ${args.join(' ')} failed: ${run.stderr}`);
  return run.stdout;
}

/** The figures of the `orders billing` row, by column header. */
function ordersRow(pane: string): Record<string, string> | undefined {
  return streamRow(pane, 'orders');
}

/** The figures of the (first) row of `stream`, by column header; a total row is `parted (total)`. */
function streamRow(pane: string, stream: string): Record<string, string> | undefined {
  const lines = pane.split('\n');
  const header = lines.find((line) => line.startsWith('STREAM'));
  const row = lines.find((line) => line.startsWith(`${stream} `));
  if (header === undefined || row === undefined) return undefined;
  const names = header.replace('OLDEST PENDING', 'OLDEST_PENDING').trim().split(/\s+/);
  const cells = row.slice(stream.length).trim().split(/\s+/);
  return Object.fromEntries(names.map((name, i) => [name, i === 0 ? stream : (cells[i - 1] ?? '')]));
}

/**
 * Captures `session`'s pane until `shows` holds of a capture, and returns that capture: what is
 * asserted after it is read from the same frame, not from a later capture (another frame).
 */
async function captureWhen(session: string, shows: (screen: string) => boolean, what: string): Promise<string> {
  let screen = '';
  await waitFor(() => shows((screen = tmux('capture-pane', '-p', '-t', session))), what, { timeout: 60_000, interval: 100 });
  return screen;
}

/**
 * Starts `top <args>` in a new tmux session (`width` columns, 20 lines) and returns a capture of
 * its pane. bash reports top's exit code on the pane once it ends (tmux's own pane_dead_status is
 * not filled in reliably when the tmux server was started from node). `env` and `nodeOptions` go
 * before node and before the CLI's path.
 */
function startTop(session: string, args: string, { width = 150, env = '', nodeOptions = '' } = {}): () => string {
  const command = `${env}'${process.execPath}' ${nodeOptions}'${CLI}' top ${args}; echo "top exited with $?"`;
  tmux('new-session', '-d', '-s', session, '-x', String(width), '-y', '20', 'bash', '-c', command);
  tmux('set-option', '-t', session, 'remain-on-exit', 'on');
  return () => tmux('capture-pane', '-p', '-t', session);
}

/** Ctrl-C to top, then waits for bash to report its exit on the pane. */
async function interruptTop(session: string, pane: () => string): Promise<void> {
  tmux('send-keys', '-t', session, 'C-c');
  await waitFor(() => pane().includes('top exited with'), 'top to exit after Ctrl-C', { timeout: 60_000, interval: 100 });
}

describe.skipIf(!TMUX)('top in a real terminal (tmux)', () => {
  const redis = useRedisServer();

  beforeAll(async () => {
    await ensureCompiled();
    await redis.client.xgroup('CREATE', 'orders', 'billing', '0', 'MKSTREAM');
    for (let i = 0; i < 3; i++) await redis.client.xadd('orders', '*', 'n', String(i));
  }, 300_000);
  afterAll(() => {
    spawnSync('tmux', ['-L', SOCKET, 'kill-server'], { stdio: 'ignore' });
  });

  // The waits are for a process (node, in bash, in tmux) that starts and redraws in seconds under
  // load: generous deadlines cost nothing when it is fast.
  it('redraws changed figures every second and exits 0 on Ctrl-C', async () => {
    const pane = startTop(SESSION, `orders --url ${redis.server.url}`);

    let screen = await captureWhen(SESSION, (shown) => ordersRow(shown)?.LENGTH === '3', 'top to show LENGTH 3');
    expect(screen).toContain(`nestjs-redis-streams top · ${redis.server.url} · every 1.0s`);
    expect(ordersRow(screen)).toMatchObject({ GROUP: 'billing', PENDING: '0', CONSUMERS: '0', DEAD: '0' });

    for (let i = 0; i < 5; i++) await redis.client.xadd('orders', '*', 'n', String(i));
    await redis.client.xreadgroup('GROUP', 'billing', 'w1', 'COUNT', 4, 'STREAMS', 'orders', '>');
    screen = await captureWhen(SESSION, (shown) => ordersRow(shown)?.PENDING === '4', 'top to show PENDING 4');
    expect(ordersRow(screen)).toMatchObject({ LENGTH: '8', PENDING: '4', CONSUMERS: '1' });
    expect(screen.split('\n').filter((line) => line.startsWith('orders '))).toHaveLength(1); // redrawn in place

    await interruptTop(SESSION, pane);
    expect(pane()).toContain('top exited with 0');
  }, 240_000);

  it('shows held and due-but-not-promoted delayed entries per stream (a partitioned one summed), updated on refresh', async () => {
    // No worker: held entries stay held, due ones stay due (a stuck promoter, as top shows it).
    await redis.client.xgroup('CREATE', 'scheduled', 'billing', '0', 'MKSTREAM');
    await redis.client.set(partitionsMetadataKey('parted'), '2');
    const producer = new RedisStreamsClient({ connection: redis.server.url, partitions: { parted: 2 } });
    const keyOf = (partition: number) => ['a', 'b', 'c', 'd', 'e', 'f'].find((key) => partitionIndexOf(key, 2) === partition)!;
    const hold = (stream: string, options: RedisStreamsRecordOptions) => lastValueFrom(producer.emit(stream, new RedisStreamsRecord({ n: 1 }, options)));
    try {
      await hold('scheduled', { deliverAt: 1_000 });
      await hold('scheduled', { deliverAt: 2_000 });
      await hold('scheduled', { delay: 'PT1H' });
      await hold('parted', { deliverAt: 1_000, partitionKey: keyOf(0) });
      await hold('parted', { delay: 'PT1H', partitionKey: keyOf(0) });
      await hold('parted', { delay: 'P1D', partitionKey: keyOf(1) });
    } finally {
      await producer.close();
    }
    const session = 'delayed';
    // Refreshed every 200 ms: the first test covers the default second.
    const pane = startTop(session, `scheduled parted --interval 200 --url ${redis.server.url}`);

    let screen = await captureWhen(session, (shown) => streamRow(shown, 'scheduled')?.DELAYED === '3', 'top to show 3 delayed entries of scheduled');
    expect(streamRow(screen, 'scheduled')).toMatchObject({ GROUP: 'billing', LENGTH: '0', DELAYED: '3', DUE: '2' });
    // The partitions' streams do not exist yet (a promotion creates them): their held entries show all the same.
    expect(streamRow(screen, 'parted:p0')).toMatchObject({ DELAYED: '2', DUE: '1' });
    expect(streamRow(screen, 'parted:p1')).toMatchObject({ DELAYED: '1', DUE: '0' });
    expect(streamRow(screen, 'parted (total)')).toMatchObject({ DELAYED: '3', DUE: '1' });

    // Promoted (as a worker would): the entries leave the counts and enter the stream, on the next refresh.
    await promoteDelayedNow(redis.client, 'scheduled');
    // The frame that shows them gone from DUE shows them in LENGTH, not in neither (one sample's figures).
    screen = await captureWhen(session, (shown) => streamRow(shown, 'scheduled')?.DUE === '0', 'top to show nothing due of scheduled');
    expect(streamRow(screen, 'scheduled')).toMatchObject({ LENGTH: '2', DELAYED: '1', DUE: '0', LAG: expect.stringMatching(/^(2|-)$/) });
    expect(screen.split('\n').filter((line) => line.startsWith('scheduled '))).toHaveLength(1); // redrawn in place

    await interruptTop(session, pane);
    expect(pane()).toContain('top exited with 0');
  }, 240_000);

  it('draws a frame whole: a process descheduled between its writes leaves no half-drawn frame on screen', async () => {
    const streams = ['frame1', 'frame2', 'frame3', 'frame4', 'frame5', 'frame6'];
    for (const stream of streams) await redis.client.xgroup('CREATE', stream, 'billing', '0', 'MKSTREAM');
    const session = 'frames';
    // top stalls 20 ms after each of its writes, as on a loaded host; drawn a line at a time, its
    // first frame stayed on screen for half a second with the header and only some of the rows.
    const slowWrites = resolve('test/fixtures/slow-terminal-writes.mjs');
    const pane = startTop(session, `${streams.join(' ')} --interval 200 --url ${redis.server.url}`, { env: 'SLOW_WRITE_MS=20 ', nodeOptions: `--import '${slowWrites}' ` });

    // Every capture from the start until a frame shows: blank, or the whole frame.
    const halfDrawn: string[] = [];
    await waitFor(
      () => {
        const lines = pane().split('\n');
        if (!lines.some((line) => line.startsWith('nestjs-redis-streams top · '))) return false;
        const whole = lines.some((line) => line.startsWith('STREAM')) && streams.every((stream) => lines.filter((line) => line.startsWith(`${stream} `)).length === 1);
        if (!whole) halfDrawn.push(lines.join('\n'));
        return whole;
      },
      'top to show its first frame',
      { timeout: 60_000, interval: 10 },
    );
    // One write can still reach tmux in two reads on a loaded host (the pty passes it on line by
    // line): one torn capture is tolerated; drawn a line at a time, 7 were seen in one run.
    expect(halfDrawn.length).toBeLessThanOrEqual(1);

    await interruptTop(session, pane);
    expect(pane()).toContain('top exited with 0');
  }, 240_000);

  it('marks a paused group beside its name, partitions included, still visible in a narrow terminal; the mark goes on resume', async () => {
    await redis.client.xgroup('CREATE', 'held', 'billing', '0', 'MKSTREAM');
    await redis.client.xgroup('CREATE', 'held', 'audit', '0');
    await redis.client.set(partitionsMetadataKey('parted2'), '2');
    for (const partition of ['parted2:p0', 'parted2:p1']) await redis.client.xgroup('CREATE', partition, 'billing', '0', 'MKSTREAM');
    const session = 'pause';
    const pane = startTop(session, `held parted2 --interval 200 --url ${redis.server.url}`, { width: 40 });
    /** The GROUP cell of each row of `stream` on `screen` (whatever the terminal cut off to the right). */
    const groupsOf = (screen: string, stream: string) => {
      const lines = screen.split('\n');
      const at = lines.find((line) => line.startsWith('STREAM'))?.indexOf('GROUP') ?? -1;
      return lines.filter((line) => line.startsWith(`${stream} `)).map((line) => line.slice(at).split('  ')[0]);
    };

    let screen = await captureWhen(session, (shown) => groupsOf(shown, 'parted2 (total)').length === 1, 'top to show the partitioned stream');
    expect(groupsOf(screen, 'held').sort()).toEqual(['audit', 'billing']);

    // On the partitioned stream's own name: every partition's row and the total are marked.
    await pauseGroup(redis.client, 'held', 'billing');
    await pauseGroup(redis.client, 'parted2', 'billing');
    screen = await captureWhen(session, (shown) => groupsOf(shown, 'parted2 (total)')[0] === 'billing (paused)', 'top to mark the paused groups');
    expect(groupsOf(screen, 'held').sort()).toEqual(['audit', 'billing (paused)']);
    expect([...groupsOf(screen, 'parted2:p0'), ...groupsOf(screen, 'parted2:p1')]).toEqual(['billing (paused)', 'billing (paused)']);
    expect(screen.split('\n').every((line) => line.length <= 40)).toBe(true);

    await resumeGroup(redis.client, 'parted2', 'billing');
    screen = await captureWhen(session, (shown) => groupsOf(shown, 'parted2 (total)')[0] === 'billing', 'top to drop the mark on resume');
    expect(groupsOf(screen, 'held').sort()).toEqual(['audit', 'billing (paused)']);

    await interruptTop(session, pane);
  }, 240_000);

  it('shows hostile group and consumer names escaped: the screen is not cleared, the title not set', async () => {
    const group = 'billing\u001b[2J\u001b[H';
    await redis.client.xgroup('CREATE', 'hostile', group, '0', 'MKSTREAM');
    await redis.client.xadd('hostile', '*', 'n', '1');
    await redis.client.xreadgroup('GROUP', group, 'w1\u001b]0;pwned\u0007', 'STREAMS', 'hostile', '>');
    await redis.client.xgroup('CREATE', 'hostile', 'csi\u009b2J\u007f', '0');
    const session = 'hostile';
    const pane = startTop(session, `hostile --url ${redis.server.url}`);

    const lines = (await captureWhen(session, (shown) => shown.includes('csi\\x9b2J\\x7f'), 'top to show the second group')).split('\n');
    // The header survives (ESC[2J would have cleared it) and the names are printed, escaped, in their column.
    expect(lines[0]).toContain('nestjs-redis-streams top · ');
    const header = lines.find((line) => line.startsWith('STREAM'))!;
    const rows = lines.filter((line) => line.startsWith('hostile '));
    expect(rows.map((row) => row.slice(header.indexOf('GROUP')).split('  ')[0]).sort()).toEqual(['billing\\x1b[2J\\x1b[H', 'csi\\x9b2J\\x7f']);
    expect(rows.every((row) => row.indexOf(' 1 ') === rows[0]!.indexOf(' 1 '))).toBe(true);
    expect(tmux('display-message', '-p', '-t', session, '#{pane_title}')).not.toContain('pwned');

    await interruptTop(session, pane);
  }, 240_000);

  it('Redis paused in the middle: the last screen stays, one error line under it, exit 1', async () => {
    const paused = await RedisServerProcess.start();
    try {
      const client = paused.client();
      await client.xgroup('CREATE', 'orders', 'billing', '0', 'MKSTREAM');
      client.disconnect();
      const session = 'paused';
      const pane = startTop(session, `orders --timeout 1000 --interval 200 --url ${paused.url}`);
      await waitFor(() => ordersRow(pane())?.GROUP === 'billing', 'top to show orders billing', { timeout: 60_000, interval: 100 });

      paused.pause();
      await waitFor(() => pane().includes('top exited with'), 'top to give up on the paused Redis', { timeout: 60_000, interval: 100 });
      // With the history: tmux adds "Pane is dead" under the last line when bash ends (remain-on-exit), which can scroll the pane.
      const screen = tmux('capture-pane', '-p', '-S', '-20', '-t', session);
      const lines = screen.split('\n').filter((line) => line.length > 0 && !line.startsWith('Pane is dead'));
      expect(lines.slice(-5)).toEqual([
        expect.stringContaining('nestjs-redis-streams top · '),
        expect.stringMatching(/^STREAM/),
        expect.stringMatching(/^orders {2}billing {7}0 /),
        `error: no answer from ${paused.url} within 1000 ms (--timeout)`,
        'top exited with 1',
      ]);
    } finally {
      paused.resume();
      await paused.stop();
    }
  }, 240_000);
});

// Said out loud, so a machine without tmux does not pass the terminal test silently.
describe.skipIf(TMUX)('top in a real terminal', () => {
  it('SKIPPED: tmux is not installed (apt-get install tmux) — the terminal test of `top` did not run', () => undefined);
});
