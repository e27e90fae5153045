import { spawn } from 'node:child_process';
import { Command, type Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { closeConnection, openConnection } from '../../src/redis/connection.js';
import { withTimeout } from '../../src/timeout.js';
import { blockEventLoop } from '../helpers/block-event-loop.js';
import { compiledPath, ensureCompiled } from '../helpers/compiled.js';
import { RedisServerProcess } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';

type Sink = { _write: (...args: unknown[]) => void; _writev: (...args: unknown[]) => void };

/**
 * Blocks the event loop for `ms` right after the next write to `redis`'s socket (on the next tick:
 * after the caller armed its timer, before any socket read): Redis answers meanwhile, and the
 * reply waits in the socket while the timer runs out.
 */
function stallAfterNextWrite(redis: Redis, ms: number): void {
  const socket = redis.stream as unknown as Sink;
  const { _write: write, _writev: writev } = socket;
  const stall = (): void => {
    socket._write = write;
    socket._writev = writev;
    blockEventLoop(ms); // synchronous: no timer and no socket read can run
  };
  socket._write = function (this: unknown, ...args: unknown[]) {
    write.apply(this, args);
    process.nextTick(stall);
  };
  socket._writev = function (this: unknown, ...args: unknown[]) {
    writev.apply(this, args);
    process.nextTick(stall);
  };
}

describe('a timeout is judged after a stalled event loop read the reply that came in time (real redis-server)', () => {
  let server: RedisServerProcess;
  const clients: RedisStreamsClient[] = [];

  beforeAll(async () => {
    await ensureCompiled();
    server = await RedisServerProcess.start();
  }, 120_000);
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await server.stop();
  });

  it('an emit whose reply arrived during a stall of 2x commandTimeout resolves with its id, and the entry is there once', async () => {
    const client = new RedisStreamsClient({ connection: server.url, commandTimeout: 200 });
    clients.push(client);
    await client.connect();
    const redis = client.unwrap<Redis>();
    stallAfterNextWrite(redis, 400);
    const id = await lastValueFrom(client.emit('stalled', { n: 1 }));
    expect(await redis.xrange('stalled', '-', '+')).toEqual([[id, ['pattern', 'stalled', 'data', '{"n":1}']]]);
  });

  it('a command that really gets no answer in time still times out', async () => {
    const client = new RedisStreamsClient({ connection: server.url, commandTimeout: 200 });
    clients.push(client);
    await client.connect();
    // A paused server answers nothing: no reply can be there when the timer runs out.
    server.pause();
    try {
      await expect(lastValueFrom(client.emit('paused', 1))).rejects.toThrow(/Redis did not answer within commandTimeout/);
    } finally {
      server.resume();
    }
  });

  it('a connection without commandTimeout leaves its commands as ioredis makes them; with one, each command is judged', async () => {
    // Nothing to judge without a timer: the server's connections (no commandTimeout) pay nothing per command.
    const plain = openConnection(server.url, 'no-timeout');
    const timed = openConnection({ host: '127.0.0.1', port: server.port, commandTimeout: 1_000 }, 'timeout');
    try {
      const sent = async (client: Redis): Promise<Command> => {
        const command = new Command('PING', []);
        await client.sendCommand(command);
        return command;
      };
      expect(Object.hasOwn(await sent(plain.client as Redis), 'setTimeout')).toBe(false);
      expect(Object.hasOwn(await sent(timed.client as Redis), 'setTimeout')).toBe(true);
    } finally {
      await closeConnection(plain);
      await closeConnection(timed);
    }
  });

  it('withTimeout: a promise settled by a reply read after the stall is not reported as timed out', async () => {
    const redis = server.client();
    try {
      await redis.ping();
      stallAfterNextWrite(redis, 300);
      await expect(withTimeout(redis.ping(), 100, 'PING')).resolves.toBe('PONG');
      await expect(withTimeout(new Promise(() => {}), 50, 'nothing')).rejects.toThrow('nothing did not complete within 50 ms');
    } finally {
      redis.disconnect();
    }
  });

  it('a send whose reply arrived during a stall of 2x its timeout resolves with the reply', async () => {
    const responder = spawn(process.execPath, [compiledPath('test/fixtures/echo-responder.ts'), server.url], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the responder did not start within 30 s')), 30_000);
        responder.stdout.on('data', (chunk: Buffer) => {
          if (chunk.toString().includes('ready')) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      const client = new RedisStreamsClient({ connection: server.url, timeout: 300 });
      clients.push(client);
      await client.connect();
      expect(await lastValueFrom(client.send('echo', { n: 0 }))).toEqual({ n: 0 }); // the reply listener is up
      // … and blocked in its XREAD again, so the reply reaches its socket during the stall.
      const admin = server.client();
      try {
        const blockedInXread = (line: string) => /\bflags=\w*b/.test(line) && /\bcmd=xread\b/.test(line);
        await waitFor(async () => String(await admin.client('LIST')).split('\n').some(blockedInXread), 'the reply listener to block in XREAD');
      } finally {
        admin.disconnect();
      }
      // The responder (another process) answers during the stall; the reply waits in the socket.
      stallAfterNextWrite(client.unwrap<Redis>(), 600);
      expect(await lastValueFrom(client.send('echo', { n: 1 }))).toEqual({ n: 1 });
    } finally {
      responder.kill('SIGKILL');
    }
  }, 60_000);
});
