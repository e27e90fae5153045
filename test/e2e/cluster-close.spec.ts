import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeadLetterNotice } from '../../src/recovery/recovery-events.js';
import { startServer } from '../fixtures/server-app.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';
import { sleep, waitFor } from '../helpers/wait.js';

const STREAM = 'close-poison';
/** The hook's run from close() on: longer than the readers' 2 s stop on a Cluster, shorter than that stop plus the tick's 2 s. */
const HOOK_MS = 3_000;

@Controller()
class PoisonController {
  @EventPattern(STREAM)
  onPoison(_data: unknown): void {
    // Never reached: the only entry is dead-lettered by recovery before any worker reads it.
  }
}

const harness = useRedisCluster();

/**
 * On a Cluster a blocked read cannot be unblocked: it returns after its `blockMs` (here 5 s), so the
 * readers' stop waits its 2 s even with every node answering. That wait must not take the one
 * the recovery tick in progress and the QUITs get after it.
 */
describe('close() on a Cluster whose every node answers', () => {
  let cluster: Cluster;
  beforeAll(() => {
    cluster = harness.cluster.client();
  });
  afterAll(() => {
    cluster.disconnect();
  });

  /** Whether the server's reader is blocked in XREADGROUP on its node. */
  async function readerBlocked(): Promise<boolean> {
    const lists = await Promise.all(cluster.nodes('master').map((node) => node.client('LIST') as Promise<string>));
    return lists
      .join('\n')
      .split('\n')
      .some((line) => line.includes(' name=nestjs-redis-streams:server-reader:g ') && / flags=\S*b/.test(line) && line.includes(' cmd=xreadgroup'));
  }

  it('a recovery tick in progress (its onDeadLetter hook running) is waited for, not given up on after the readers stop', async () => {
    // One entry delivered once to a consumer that is gone: with maxDeliveries 1, the first tick dead-letters it.
    await cluster.xgroup('CREATE', STREAM, 'g', '0', 'MKSTREAM');
    const id = (await cluster.xadd(STREAM, '*', 'pattern', STREAM, 'data', '"poison"')) as string;
    await cluster.xreadgroup('GROUP', 'g', 'gone', 'COUNT', 1, 'STREAMS', STREAM, '>');

    const letters: DeadLetterNotice[] = [];
    let closeCalled!: () => void;
    const closing = new Promise<void>((resolve) => (closeCalled = resolve));
    let hookFinished = false;
    const { app, server } = await startServer(
      {
        connection: { cluster: { nodes: harness.cluster.urls } },
        group: 'g',
        consumer: 'closing',
        // A block far longer than close() may take: a reader that waited it out fails the bound below.
        blockMs: 30_000,
        recovery: {
          minIdleTime: 200,
          interval: 50,
          maxDeliveries: 1,
          onDeadLetter: async (letter) => {
            letters.push(letter);
            await closing;
            await sleep(HOOK_MS);
            hookFinished = true;
          },
        },
      },
      [PoisonController],
    );
    const errors: unknown[] = [];
    server.on('error', (error) => errors.push(error));

    let closedWhileHookRan: boolean | undefined;
    try {
      await waitFor(() => letters.length > 0, 'the dead letter hook to start', { timeout: 15_000 });
      // The reader blocked in its XREADGROUP, which close() cannot cut short on a Cluster.
      await waitFor(readerBlocked, 'the reader blocked in XREADGROUP');
      const closeStarted = performance.now();
      const closed = app.close();
      closeCalled();
      await closed;
      closedWhileHookRan = !hookFinished;
      // The readers' own 2 s, then the rest of the tick's 3 s (about 3 s in all): not the readers' 30 s block.
      expect(performance.now() - closeStarted).toBeLessThan(10_000);
    } finally {
      await app.close();
    }
    // close() waited for the tick: the hook ran to its end before close() returned (it was left
    // running after close(), given up on at once once the readers' stop had spent the 2 s).
    expect(closedWhileHookRan).toBe(false);
    expect(letters.map((letter) => [letter.id, letter.reason, letter.deliveryCount])).toEqual([[id, 'max_deliveries', 1]]);
    expect(await cluster.xpending(STREAM, 'g')).toEqual([0, null, null, null]);
    expect(await cluster.xlen(letters[0]?.deadLetterKey as string)).toBe(1);
    expect(errors).toEqual([]);
  }, 60_000);
});
