import { spawn, type ChildProcess } from 'node:child_process';
import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../fixtures/server-app.js';
import { pendingCount } from '../helpers/stream-state.js';
import { compiledPath, ensureCompiled } from '../helpers/compiled.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

let handled = 0;

@Controller()
class DoubleController {
  @MessagePattern('double')
  double(@Payload() { n }: { n: number }): number {
    handled++;
    return n * 2;
  }
}

/** The requester fixture as a child process, with its output as lines. */
function spawnRequester(url: string, pattern: string, count: number, timeoutMs: number): { child: ChildProcess; lines: string[]; exited: Promise<void> } {
  const child = spawn(process.execPath, [compiledPath('test/fixtures/requester.ts'), url, pattern, String(count), String(timeoutMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  let partial = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, lines, exited };
}

describe('reply streams keep every reply until its requester read it', () => {
  const redis = useRedisServer();
  beforeAll(() => ensureCompiled(), 180_000);

  it('3000 requests answered while the requesting process is stopped (a busy event loop): every reply arrives', async () => {
    const count = 3_000;
    // The request stream and the server's group exist before the server runs: it answers the whole backlog at once.
    await redis.client.xgroup('CREATE', 'double', 'doubler', '0', 'MKSTREAM');
    // Deadlines fit a loaded machine (a process start, 3000 requests and 3000 replies): waiting on a
    // condition that comes costs nothing when it is fast. The request timeout and commandTimeout
    // outlast the waits before SIGCONT: the stop may come before the requester read the replies
    // to its last XADDs, and its expired timers run before it reads them.
    const requester = spawnRequester(redis.server.url, 'double', count, 180_000);
    let server: Awaited<ReturnType<typeof startServer>> | undefined;
    try {
      await waitFor(async () => (await redis.client.xlen('double')) === count, 'every request entry', { timeout: 60_000 });
      const replyStream = requester.lines.find((line) => line.startsWith('replies '))?.slice('replies '.length) as string;
      expect(replyStream).toMatch(/:replies$/);
      requester.child.kill('SIGSTOP');
      server = await startServer({ connection: redis.server.url, group: 'doubler', consumer: 'd1' }, [DoubleController]);
      // Acked only after its reply is written: every reply is in the stream, none read yet.
      await waitFor(async () => handled === count && (await pendingCount(redis.client, 'double', 'doubler')) === 0, 'every request answered and acked', { timeout: 90_000 });
      expect(await redis.client.xlen(replyStream)).toBe(count);
      requester.child.kill('SIGCONT');
      await waitFor(() => requester.lines.some((line) => line.startsWith('done ')), 'the requester to settle every request', { timeout: 60_000 }).catch(
        (error: Error) => {
          throw new Error(`${error.message}; last: ${requester.lines.at(-1)}`);
        },
      );
      expect(requester.lines.find((line) => line.startsWith('done '))).toBe(`done ${count} 0`);
      await requester.exited;
    } finally {
      requester.child.kill('SIGKILL');
      await server?.app.close();
    }
  }, 240_000);
});
