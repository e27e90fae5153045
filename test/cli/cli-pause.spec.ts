import { Controller, type INestMicroservice } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { runCli as runCliInProcess } from '../../src/cli/program.js';
import { pausedKey } from '../../src/flow/flow-keys.js';
import { partitionsMetadataKey, partitionStreamKey } from '../../src/partitions/partition-keys.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { runCli, type CliRun } from '../helpers/run-cli.js';
import { SHOWN_DURATION } from '../helpers/shown-duration.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const CLI_DEADLINE_MS = 60_000;
const handled: number[] = [];

@Controller()
class PartedController {
  @EventPattern<string>('parted', { partitions: 2 })
  onEntry(@Payload() data: { n: number }): void {
    handled.push(data.n);
  }
}

/** Captures what the CLI prints; `terminal` set means "stdout is a terminal". */
function capture(): CliIo & { out: string; err: string } {
  const io = {
    out: '',
    err: '',
    stdout: (text: string) => void (io.out += text),
    stderr: (text: string) => void (io.err += text),
    env: {},
    readStdin: async () => '',
    terminal: { columns: 120 } as NodeJS.WriteStream,
    onInterrupt: () => () => undefined,
  };
  return io;
}

describe('CLI pause / resume (real redis-server)', { timeout: 120_000 }, () => {
  const redis = useRedisServer();
  let app: INestMicroservice | undefined;

  beforeAll(ensureCompiled, 300_000);
  beforeEach(async () => {
    await redis.client.flushall();
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    handled.length = 0;
  });

  const cli = (...args: string[]): Promise<CliRun> => runCli([...args, '--url', redis.server.url], {}, { timeoutMs: CLI_DEADLINE_MS });

  /** A run at a terminal, in this process: the human line. */
  async function atTerminal(...args: string[]): Promise<{ code: number; out: string; err: string }> {
    const io = capture();
    const code = await runCliInProcess([...args, '--url', redis.server.url], io);
    return { code, out: io.out, err: io.err };
  }

  it('pause then pause again: JSON says what changed, exit 0 both times; resume twice likewise', async () => {
    const first = await cli('pause', 'orders', 'billing');
    expect(first).toMatchObject({ code: 0, stderr: '' });
    const paused = JSON.parse(first.stdout) as Record<string, unknown>;
    expect(paused).toEqual({ key: 'orders', group: 'billing', paused: true, changed: true, pausedAt: expect.any(String), pausedForMs: expect.any(Number) });
    expect(await redis.client.hget(pausedKey('orders'), 'billing')).toBe(String(Date.parse(paused.pausedAt as string)));

    const again = JSON.parse((await cli('pause', 'orders', 'billing')).stdout) as Record<string, unknown>;
    expect(again).toMatchObject({ paused: true, changed: false, pausedAt: paused.pausedAt });

    const resumed = await cli('resume', 'orders', 'billing');
    expect(resumed).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(resumed.stdout)).toMatchObject({ key: 'orders', group: 'billing', paused: false, changed: true, pausedAt: paused.pausedAt });
    expect(await redis.client.hexists(pausedKey('orders'), 'billing')).toBe(0);
    expect(JSON.parse((await cli('resume', 'orders', 'billing')).stdout)).toEqual({
      key: 'orders', group: 'billing', paused: false, changed: false, pausedAt: null, pausedForMs: null,
    });
  });

  it('at a terminal: one line saying what changed, names escaped', async () => {
    const group = 'bill\u001b[2Jing';
    expect(await atTerminal('pause', 'orders', group)).toEqual({
      code: 0, err: '', out: 'paused group bill\\x1b[2Jing on orders: its workers stop reading within a second; handlers already running finish\n',
    });
    const again = await atTerminal('pause', 'orders', group);
    expect(again.out).toMatch(new RegExp(String.raw`^group bill\\x1b\[2Jing on orders already paused since \d{4}-\d\d-\d\dT[\d:.]+Z \(${SHOWN_DURATION} ago\)\n$`));
    expect((await atTerminal('resume', 'orders', group)).out).toMatch(new RegExp(String.raw`^resumed group bill\\x1b\[2Jing on orders \(paused for ${SHOWN_DURATION}\)\n$`));
    expect((await atTerminal('resume', 'orders', group)).out).toBe('group bill\\x1b[2Jing on orders was not paused\n');
  });

  it('bad arguments: exit 2, one line naming the argument; a partition key is refused', async () => {
    const empty = await cli('pause', '', 'billing');
    expect(empty).toMatchObject({ code: 2, stdout: '', stderr: 'error: invalid <key>: must be a non-empty string, got ""\n' });
    expect(await cli('resume', 'orders', '')).toMatchObject({ code: 2, stdout: '', stderr: 'error: invalid <group>: must be a non-empty string, got ""\n' });
    expect((await cli('pause', 'orders')).code).toBe(2);

    await redis.client.set(partitionsMetadataKey('parted'), '2');
    const partition = await cli('pause', 'parted:p1', 'billing');
    expect(partition).toMatchObject({ code: 2, stdout: '', stderr: 'error: invalid <key>: parted:p1 is partition 1 of parted; name parted: one pause covers every partition\n' });
    expect(await redis.client.exists(pausedKey('parted:p1'))).toBe(0);
  });

  it('info shows paused groups: a line each, the mark in the groups table, `paused` in the JSON; a partitioned stream for all partitions', async () => {
    await redis.client.xgroup('CREATE', 'orders', 'billing', '0', 'MKSTREAM');
    await redis.client.xgroup('CREATE', 'orders', 'audit', '0');
    await cli('pause', 'orders', 'billing');
    const since = new Date(Number(await redis.client.hget(pausedKey('orders'), 'billing'))).toISOString();
    const info = await atTerminal('info', 'orders');
    expect(info.out.split('\n').slice(1, 6)).toEqual([
      `paused: group billing since ${since}`,
      '',
      expect.stringMatching(/^GROUP {13}CONSUMERS/),
      expect.stringMatching(/^audit {21}0 /),
      expect.stringMatching(/^billing \(paused\) {10}0 /),
    ]);
    expect(JSON.parse((await cli('info', 'orders')).stdout)).toMatchObject({ paused: [{ group: 'billing', pausedAt: since }] });
    await cli('resume', 'orders', 'billing');
    expect(JSON.parse((await cli('info', 'orders')).stdout)).not.toHaveProperty('paused');

    await redis.client.set(partitionsMetadataKey('parted'), '2');
    for (const partition of ['parted:p0', 'parted:p1']) await redis.client.xgroup('CREATE', partition, 'billing', '0', 'MKSTREAM');
    await cli('pause', 'parted', 'billing');
    const parted = await atTerminal('info', 'parted');
    expect(parted.out).toMatch(/^paused: group billing since \S+ \(all partitions\)$/m);
    expect(parted.out.split('\n').filter((line) => line.startsWith('billing (paused)  '))).toHaveLength(3);
    expect(JSON.parse((await cli('info', 'parted')).stdout)).toMatchObject({ paused: [{ group: 'billing' }] });
  });

  it("a partitioned stream's workers stop at the CLI's pause and handle what waited once resumed", async () => {
    const moduleRef = await Test.createTestingModule({ controllers: [PartedController] }).compile();
    const server = new RedisStreamsServer({ connection: redis.server.url, group: 'billing', consumer: 'c1', blockMs: 100, recovery: false });
    app = moduleRef.createNestMicroservice({ strategy: server, logger: false });
    await app.listen();

    const paused = await cli('pause', 'parted', 'billing');
    expect(JSON.parse(paused.stdout)).toMatchObject({ key: 'parted', group: 'billing', paused: true, changed: true, partitions: 2 });
    expect(await server.isPaused('parted')).toBe(true);
    await waitFor(() => server.liveness().streams.every((stream) => stream.paused), 'the worker to see the pause on both partitions', { timeout: 10_000 });

    await redis.client.xadd(partitionStreamKey('parted', 1), '*', 'pattern', 'parted', 'data', JSON.stringify({ n: 7 }));
    expect(handled).toEqual([]);
    expect(JSON.parse((await cli('resume', 'parted', 'billing')).stdout)).toMatchObject({ paused: false, changed: true, partitions: 2 });
    await waitFor(() => handled.includes(7), 'the entry added while paused to be handled after resume', { timeout: 10_000 });
  });
});
