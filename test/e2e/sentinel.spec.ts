import { Controller, Module } from '@nestjs/common';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { lastValueFrom } from 'rxjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsModule } from '../../src/module/redis-streams.module.js';
import { DeadLetterService } from '../../src/recovery/dead-letter.service.js';
import type { RedisConnection } from '../../src/redis/connection.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { useRedisSentinel } from '../helpers/redis-sentinel.js';
import { runCli } from '../helpers/run-cli.js';
import { waitFor } from '../helpers/wait.js';

const PASSWORD = 'data-Secret-4821';
const SENTINEL_PASSWORD = 'sentinel-Secret-9377';

const handled: number[] = [];

@Controller()
class SentinelController {
  @EventPattern('snt-orders', { maxDeliveries: 1 })
  orders(@Payload() n: number) {
    if (n < 0) throw new Error('poison');
    handled.push(n);
  }

  @MessagePattern('snt-double')
  double(@Payload() n: number) {
    return n * 2;
  }
}

@Module({ controllers: [SentinelController] })
class SentinelModule {}

// Passwords on the data nodes and on the sentinels: both must reach the right place.
const harness = useRedisSentinel({ password: PASSWORD, sentinelPassword: SENTINEL_PASSWORD });

/** Connections named by the transport on `node`, by name. */
async function transportConnections(port: number): Promise<Record<string, number>> {
  const redis = harness.set.node(port).client();
  try {
    const counts: Record<string, number> = {};
    for (const name of ((await redis.client('LIST')) as string).matchAll(/ name=(nestjs-redis-streams:\S+)/g)) counts[name[1]!] = (counts[name[1]!] ?? 0) + 1;
    return counts;
  } finally {
    redis.disconnect();
  }
}

/** Clients connected to the sentinels, summed (without the connection that asks). */
async function sentinelClients(): Promise<number> {
  let sum = 0;
  for (const sentinel of harness.set.sentinels) {
    const redis = sentinel.client();
    try {
      await redis.connect();
      sum += Number(/connected_clients:(\d+)/.exec(await redis.info('clients'))?.[1]) - 1;
    } finally {
      redis.disconnect();
    }
  }
  return sum;
}

describe('through sentinels: server, client and module services', () => {
  it('URL form and ioredis options form: events, requests and a dead letter round trip on the primary only', async () => {
    const set = harness.set;
    const url = set.url;
    const options: RedisConnection = { sentinels: set.addresses, name: set.name, password: PASSWORD, sentinelPassword: SENTINEL_PASSWORD };
    const moduleRef = await Test.createTestingModule({ imports: [SentinelModule, RedisStreamsModule.forRoot({ connection: url })] }).compile();
    const app = moduleRef.createNestMicroservice({
      strategy: new RedisStreamsServer({ connection: url, group: 'snt', blockMs: 100, shutdownTimeout: 500, recovery: { minIdleTime: 200, interval: 100 } }),
    });
    const client = new RedisStreamsClient({ connection: options, commandTimeout: 5_000 });
    // The sentinels talk to each other; what the transport adds comes on top.
    const baseline = await sentinelClients();
    try {
      await app.listen();
      const sent = Array.from({ length: 20 }, (_, i) => i);
      await Promise.all(sent.map((n) => lastValueFrom(client.emit('snt-orders', n))));
      await lastValueFrom(client.emit('snt-orders', -1));
      expect(await Promise.all([1, 2, 3].map((n) => lastValueFrom(client.send('snt-double', n))))).toEqual([2, 4, 6]);
      const deadLetters = moduleRef.get(DeadLetterService);
      await waitFor(async () => handled.length === 20 && (await deadLetters.size('snt-orders')) === 1, 'every entry handled and the poison one dead-lettered');
      expect([...handled].sort((a, b) => a - b)).toEqual(sent);
      expect((await deadLetters.list('snt-orders')).deadLetters.map((d) => d.fields.data)).toEqual(['-1']);

      // Every connection went to the primary the sentinels name, none to the replica.
      expect(await transportConnections(set.primary.port)).toMatchObject({
        'nestjs-redis-streams:server': 1,
        'nestjs-redis-streams:server-reader:snt': 1,
        'nestjs-redis-streams:server-delayed-wake': 1,
        'nestjs-redis-streams:client': 1,
        'nestjs-redis-streams:client-replies': 1,
        'nestjs-redis-streams:module': 1,
      });
      expect(await transportConnections(set.replica.port)).toEqual({});
      // One failover-detector subscription per connection and sentinel: (server 3 (commands, reader, delayed wake-up) + client 2 + module 1) × 3.
      await waitFor(async () => (await sentinelClients()) === baseline + 18, 'one subscriber connection per transport connection on every sentinel');
    } finally {
      await client.close();
      await app.close();
      await moduleRef.close();
    }
  });

  it('a wrong primary name fails listen() and the first emit with the sentinels\' answer, without the passwords', async () => {
    const wrong = harness.set.url.replace(`/${harness.set.name}`, '/nosuchprimary');
    const server = new RedisStreamsServer({ connection: wrong, group: 'g', startupTimeout: 1_500 });
    server.on('error', () => undefined);
    server.addHandler('snt-x', async () => undefined, true);
    const listened = (await new Promise<unknown>((resolve) => void server.listen(resolve))) as Error;
    await server.close();
    const client = new RedisStreamsClient({ connection: wrong, commandTimeout: 1_000 });
    const emitted = await lastValueFrom(client.emit('snt-x', 1)).catch((error: Error) => error);
    await client.close();
    expect(listened).toMatchObject({ name: 'RedisStreamsConnectionError' });
    expect(emitted).toMatchObject({ name: 'RedisStreamsPublishError', cause: { name: 'RedisStreamsConnectionError' } });
    for (const error of [listened, emitted as Error]) {
      // The sentinels' answer reaches the user; the passwords do not.
      expect(error.message).toContain('No such master with that name');
      expect(`${error.message} ${error.stack}`).not.toContain(PASSWORD);
      expect(`${error.message} ${error.stack}`).not.toContain(SENTINEL_PASSWORD);
    }
    expect(listened.message).toContain(`127.0.0.1:${harness.set.sentinels[0]!.port}`);
  });
});

describe('the CLI through sentinels', () => {
  beforeAll(() => ensureCompiled(), 120_000);

  it('info and pending answer with --url redis+sentinel://…, and nothing printed holds a password', async () => {
    const set = harness.set;
    const redis = set.primary.client();
    try {
      await redis.xgroup('CREATE', 'snt-cli', 'g', '0', 'MKSTREAM');
      await redis.xadd('snt-cli', '*', 'n', '1');
      await redis.xadd('snt-cli', '*', 'n', '2');
      await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', '1', 'STREAMS', 'snt-cli', '>');
    } finally {
      redis.disconnect();
    }
    const [info, pending, wrongName] = await Promise.all([
      runCli(['info', 'snt-cli', '--url', set.url, '--json']),
      runCli(['pending', 'snt-cli', 'g'], { REDIS_URL: set.url }),
      runCli(['info', 'snt-cli', '--url', set.url.replace(`/${set.name}`, '/nosuchprimary')]),
    ]);
    expect(info.stderr).toBe('');
    expect(JSON.parse(info.stdout)).toMatchObject({ key: 'snt-cli', stream: { length: 2 }, groups: [{ name: 'g', pending: 1 }] });
    expect(pending.stderr).toBe('');
    expect(JSON.parse(pending.stdout)).toMatchObject({ count: 1 });
    expect(wrongName.code).not.toBe(0);
    expect(wrongName.stderr).toMatch(/cannot connect to redis\+sentinel:\/\/:\*\*\*@127\.0\.0\.1:\d+,.*\/nosuchprimary\?sentinelPassword=\*\*\*/);
    for (const run of [info, pending, wrongName]) {
      expect(run.stdout + run.stderr).not.toContain(PASSWORD);
      expect(run.stdout + run.stderr).not.toContain(SENTINEL_PASSWORD);
    }
  });
});
