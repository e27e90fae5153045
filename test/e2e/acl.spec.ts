import { Controller, Logger } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom, toArray } from 'rxjs';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { RedisStreamsScheduler } from '../../src/client/redis-streams-scheduler.js';
import { probeCapabilities } from '../../src/redis/capabilities.js';
import type { DeadLetterNotice } from '../../src/recovery/recovery-events.js';
import type { RedisStreamsContext } from '../../src/server/context.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { REDIS_STREAMS_CONNECTION, RedisStreamsModule, StreamInspectionService } from '../../src/index.js';
import { removeDelayed } from '../../src/delayed/delayed-inspection.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { startDashboardApp } from '../helpers/dashboard-app.js';
import { ADAPTERS, getJson } from '../helpers/dashboard-http.js';
import { pendingCount } from '../helpers/stream-state.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { runCli } from '../helpers/run-cli.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The least-privilege ACL rules of docs/security.md, exactly as documented there (keep in step).
 * Streams of the sample: `orders` (events), `quotes` (requests), their dead-letter keys
 * `{orders}:dead` / `{quotes}:dead`, their handler-error and retry records (`{orders}:error:*`,
 * `{orders}:retry:*`), their partition metadata keys `{orders}:partitions` / `{quotes}:partitions`
 * (read only: neither is partitioned), their pause state `{orders}:paused` (polled by workers, written
 * by the operator's `pause` / `resume`), and the clients' reply streams `nestjs-redis-streams:*`.
 */
const CONNECT = '+hello +auth +ping +info +client|setname';
const RULES = {
  worker: `resetchannels ${CONNECT} +client|id +client|unblock +xgroup|create +xreadgroup +xack +xpending +xclaim +xrange +xadd +pexpire +multi +exec +evalsha +eval +type +time +exists +xinfo|stream +xinfo|groups +xinfo|consumers +xgroup|delconsumer +command|info +xsetid +set +mget +del +get +zrangebyscore +zrange +hget +hmget +zrem +hdel +zscore +zadd +hset +subscribe &{orders}:delayed-wake &{quotes}:delayed-wake ~orders ~quotes ~{orders}:delayed* ~{quotes}:delayed* ~{orders}:dead ~{quotes}:dead ~{orders}:error:* ~{quotes}:error:* ~{orders}:retry:* ~{quotes}:retry:* ~{orders}:partitions ~{quotes}:partitions ~{orders}:paused ~{quotes}:paused ~nestjs-redis-streams:* ~{nestjs-redis-streams:capability-probe}:*`,
  producer: `resetchannels ${CONNECT} +xadd +xread +xtrim +pexpire +del +time +command|info +xsetid +get +evalsha +eval +zadd +hset +zscore +hget +sadd +zrange +publish &{orders}:delayed-wake ~orders ~quotes ~{orders}:delayed* ~{orders}:partitions ~{quotes}:partitions ~nestjs-redis-streams:* ~{nestjs-redis-streams:capability-probe}:*`,
  operator: `${CONNECT} +xinfo|stream +xinfo|groups +xinfo|consumers +xpending +xautoclaim +xack +xrange +xrevrange +xdel +xadd +evalsha +eval +type +exists +get +mget +time +zcard +zcount +zrange +hget +hmget +zadd +zrangebyscore +zrem +hdel +zscore +hset +srem +multi +exec +hsetnx +hgetall ~orders ~{orders}:dead ~{orders}:partitions ~{orders}:retry:* ~{orders}:delayed* ~{orders}:paused`,
};
const PASSWORDS = { worker: 'worker-pw', producer: 'producer-pw', operator: 'operator-pw' };
/** What a worker adds for handlers with shared limits (docs/security.md: rate limits and global concurrency). */
const FLOW_RULES = '+xread +hmget +hset +pexpire +zrangebyscore +zremrangebyscore +hdel +hvals +hincrby +zadd +zrem +hget ~{orders}:rate:* ~{orders}:permits:* ~{orders}:permit-leases:*';

/** What a worker adds for progress, kept results and cancels (docs/security.md: entry lifecycle). */
const LIFECYCLE_WORKER_RULES = '~{orders}:progress:* ~{orders}:result:* ~{orders}:lifecycle ~{orders}:cancelled:*';
/** What a caller adds to the producer rules to read an entry's status, progress and result (wait, consume, watch). */
const LIFECYCLE_CALLER_RULES = '+exists +xrange +xrevrange +xinfo|groups +xpending ~{orders}:progress:* ~{orders}:result:* ~{orders}:lifecycle ~{orders}:dead';
/** And to cancel entries (client.cancel). */
const CANCEL_CALLER_RULES = '+xack +xdel +zrem +hdel +srem +set ~{orders}:cancelled:*';
/** What an operator adds for the CLI's `entry` and `cancel`. */
const LIFECYCLE_OPERATOR_RULES = '+set ~{orders}:progress:* ~{orders}:result:* ~{orders}:cancelled:*';

/**
 * ioredis names its library on connect (CLIENT SETINFO, Redis 7.2+) and asks for maintenance
 * notifications (CLIENT MAINT_NOTIFICATIONS): allowed where the server takes the rule (7.0 refuses
 * both; 6.2 takes both and, without them, logs a denial for each connection).
 */
async function allowHandshakeOn(node: Redis, user: string): Promise<void> {
  for (const rule of ['+client|setinfo', '+client|maint_notifications']) {
    await node.call('ACL', 'SETUSER', user, rule).catch(() => undefined);
  }
}

/** Every ACL denial `node` logged, as `user: reason object`. */
async function denialsOf(node: Redis): Promise<string[]> {
  const log = (await node.call('ACL', 'LOG')) as unknown[][];
  return log.map((entry) => {
    const fields = Object.fromEntries(Array.from({ length: entry.length / 2 }, (_, i) => [String(entry[2 * i]), String(entry[2 * i + 1])]));
    return `${fields.username}: ${fields.reason} ${fields.object}`;
  });
}

const handled: { data: unknown; id: string; deliveryCount: number }[] = [];
/** Lifecycle jobs: a `gated` one waits for the test to open its gate, a `blocking` one for its signal to abort. */
const gates = new Map<number, () => void>();
const aborts: { n: number; reason: unknown }[] = [];

@Controller()
class LifecycleAclController {
  @EventPattern<string>('orders', { group: 'lifecycle', keepResults: { ttl: 'PT1M' } })
  async build(@Payload() data: { n: number; block?: boolean }, @Ctx() ctx: RedisStreamsContext): Promise<{ total: number }> {
    await ctx.progress({ step: 1, n: data.n });
    if (data.block) {
      const signal = ctx.signal;
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      aborts.push({ n: data.n, reason: (signal.reason as { reason?: unknown }).reason });
    } else {
      await new Promise<void>((resolve) => gates.set(data.n, resolve));
      await ctx.progress({ step: 2, n: data.n });
    }
    return { total: data.n * 10 };
  }
}

@Controller()
class LimitedAclController {
  @EventPattern<string>('orders', { group: 'limited', rateLimit: { max: 100, per: 1000 }, globalConcurrency: 2 })
  onOrder(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    handled.push({ data, id: ctx.getId(), deliveryCount: ctx.getDeliveryCount() });
  }
}

@Controller()
class AclController {
  @EventPattern<string>('orders')
  onOrder(@Payload() data: { poison?: boolean }, @Ctx() ctx: RedisStreamsContext): void {
    handled.push({ data, id: ctx.getId(), deliveryCount: ctx.getDeliveryCount() });
    if (data.poison) throw new Error('poison');
  }

  @MessagePattern('quotes')
  quote(@Payload() numbers: number[]): number {
    return numbers.reduce((a, b) => a + b, 0);
  }
}

describe('ACL least privilege: the documented worker, producer and operator rules are enough', () => {
  const redis = useRedisServer();
  let running: (RunningServer & { errors: Error[]; deadLetters: DeadLetterNotice[] }) | undefined;
  let client: RedisStreamsClient | undefined;

  const url = (user: keyof typeof PASSWORDS) => `redis://${user}:${PASSWORDS[user]}@127.0.0.1:${redis.server.port}`;

  const allowHandshake = (user: string) => allowHandshakeOn(redis.client, user);

  beforeAll(async () => {
    for (const user of Object.keys(RULES) as (keyof typeof RULES)[]) {
      await redis.client.call('ACL', 'SETUSER', user, 'reset', 'on', `>${PASSWORDS[user]}`, ...RULES[user].split(' '));
      await allowHandshake(user);
    }
  });
  beforeEach(async () => {
    handled.length = 0;
    await redis.client.call('ACL', 'LOG', 'RESET');
    for (const key of ['orders', 'quotes', '{orders}:dead', '{quotes}:dead', '{orders}:delayed', '{orders}:delayed-bodies']) await redis.client.del(key);
    for (const key of await redis.client.keys('{orders}:*:g:*')) await redis.client.del(key);
  });
  afterEach(async () => {
    await client?.close();
    client = undefined;
    await running?.app.close();
    running = undefined;
    await redis.client.call('ACL', 'SETUSER', 'worker', '+xack'); // restored for the next test
  });

  /** Every ACL denial Redis logged (none in a flow the rules are enough for). */
  async function denials(): Promise<string[]> {
    return denialsOf(redis.client);
  }

  async function startWorker(options: object = {}): Promise<void> {
    const errors: Error[] = [];
    const deadLetters: DeadLetterNotice[] = [];
    const started = await startServer(
      {
        connection: url('worker'),
        group: 'g',
        consumer: 'w1',
        blockMs: 100,
        recovery: { minIdleTime: 500, interval: 100, maxDeliveries: 2 },
        ...options,
      },
      [AclController],
      [],
      (server) => {
        server.on('error', (error: Error) => errors.push(error));
        (server.on.bind(server) as (event: string, listener: (notice: DeadLetterNotice) => void) => void)('deadLetter', (notice) =>
          deadLetters.push(notice),
        );
      },
    );
    running = { ...started, errors, deadLetters };
  }

  it('worker + producer: emit → handler, send → reply, a poison event recovered then dead-lettered', async () => {
    Logger.overrideLogger(false);
    await startWorker();
    client = new RedisStreamsClient({ connection: url('producer'), commandTimeout: 5_000, trim: { maxAge: 'PT1H' } });
    const ids = [await lastValueFrom(client.emit('orders', { n: 1 })), await lastValueFrom(client.emit('orders', { poison: true }))];
    expect(await lastValueFrom(client.send('quotes', [1, 2, 3]))).toBe(6);
    // A delayed emit: held by the producer, promoted by the worker (docs/scheduling.md).
    await lastValueFrom(client.emit('orders', new RedisStreamsRecord({ n: 'later' }, { delay: 50 })));
    await waitFor(() => handled.some((h) => (h.data as { n?: unknown }).n === 'later'), 'the delayed event handled');
    await waitFor(() => running!.deadLetters.length === 1, 'the poison event dead-lettered by recovery', { timeout: 15_000 });
    expect(running!.deadLetters[0]).toMatchObject({ stream: 'orders', group: 'g', id: ids[1], reason: 'max_deliveries', error: 'Error: poison' });
    expect(handled.filter((h) => h.id === ids[1]).map((h) => h.deliveryCount)).toEqual([1, 2]);
    expect(await redis.client.exists(`{orders}:error:g:${ids[1]}`)).toBe(0); // its error record, read and deleted by the worker
    await waitFor(async () => (await pendingCount(redis.client, 'orders', 'g')) === 0, 'nothing pending');
    expect(await redis.client.xlen('{orders}:dead')).toBe(1);
    expect(running!.errors).toEqual([]);
    expect(await denials()).toEqual([]);
    Logger.overrideLogger(true as never);
  });

  it('worker with a retry policy: failed entries released with their retry record, retried, then dead-lettered with the error', async () => {
    Logger.overrideLogger(false);
    await startWorker({ recovery: { minIdleTime: 500, interval: 100, maxDeliveries: 2, retry: { type: 'fixed', delay: 50 } } });
    client = new RedisStreamsClient({ connection: url('producer'), commandTimeout: 5_000 });
    const id = (await lastValueFrom(client.emit('orders', { poison: true }))) as string;
    await waitFor(() => running!.deadLetters.length === 1, 'the poison event dead-lettered after its retry', { timeout: 15_000 });
    expect(running!.deadLetters[0]).toMatchObject({ stream: 'orders', id, reason: 'max_deliveries', error: 'Error: poison' });
    expect(handled.map((h) => h.deliveryCount)).toEqual([1, 2]);
    expect(running!.errors).toEqual([]);
    expect(await denials()).toEqual([]);
    Logger.overrideLogger(true as never);
  });

  it('entry lifecycle: a worker reports progress and keeps results, a caller reads status, progress and result (wait, consume, watch) and cancels, with no ACL denial', async () => {
    const worker = [...RULES.worker.split(' '), ...LIFECYCLE_WORKER_RULES.split(' ')];
    await redis.client.call('ACL', 'SETUSER', 'lifecycle-worker', 'reset', 'on', '>lifecycle-pw', ...worker);
    const caller = [...RULES.producer.split(' '), ...LIFECYCLE_CALLER_RULES.split(' '), ...CANCEL_CALLER_RULES.split(' ')];
    await redis.client.call('ACL', 'SETUSER', 'caller', 'reset', 'on', '>caller-pw', ...caller);
    for (const user of ['lifecycle-worker', 'caller']) await allowHandshake(user);
    gates.clear();
    aborts.length = 0;
    const errors: Error[] = [];
    Logger.overrideLogger(false);
    const lifecycle = await startServer(
      { connection: `redis://lifecycle-worker:lifecycle-pw@127.0.0.1:${redis.server.port}`, group: 'g', consumer: 'l1', blockMs: 100, recovery: { minIdleTime: 600, interval: 100 } },
      [LifecycleAclController],
      [],
      (server) => server.on('error', (error: Error) => errors.push(error)),
    );
    try {
      client = new RedisStreamsClient({ connection: `redis://caller:caller-pw@127.0.0.1:${redis.server.port}`, commandTimeout: 5_000 });
      const id = (await lastValueFrom(client.emit('orders', { n: 1 }))) as string;
      await waitFor(() => gates.has(1), 'the first job running');
      await waitFor(async () => (await client!.progress('orders', id)) !== null, 'its first progress');
      const status = await client.entryStatus('orders', id, { group: 'lifecycle' });
      expect([status.state, status.progress?.value, status.result]).toEqual(['running', { step: 1, n: 1 }, null]);
      const watched = firstValueFrom(client.watch('orders', id).pipe(toArray()));
      const result = client.result('orders', id, { wait: 10_000, consume: true });
      gates.get(1)!();
      expect(await result).toMatchObject({ state: 'done', value: { total: 10 }, delivery: 1 });
      expect((await watched).map((progress) => progress.value)).toContainEqual({ step: 2, n: 1 });
      expect(await client.result('orders', id)).toBeNull(); // consumed
      expect((await client.entryStatus('orders', id, { group: 'lifecycle' })).state).toBe('done');

      // A running job cancelled by the caller: dead-lettered, its handler's signal aborted at the next lease renewal.
      const blocked = (await lastValueFrom(client.emit('orders', { n: 2, block: true }))) as string;
      await waitFor(async () => (await client!.progress('orders', blocked)) !== null, 'the blocking job running');
      expect(await client.cancel('orders', blocked, 'no longer wanted')).toMatchObject({ cancelled: true, previous: 'pending' });
      await waitFor(() => aborts.length === 1, 'the handler aborted', { timeout: 10_000 });
      expect(aborts).toEqual([{ n: 2, reason: 'cancelled' }]);
      expect(await client.result('orders', blocked, { wait: 5_000 })).toMatchObject({ state: 'done', value: { total: 20 } });
      expect((await client.entryStatus('orders', blocked, { group: 'lifecycle' })).state).toBe('dead-lettered');
    } finally {
      await lifecycle.app.close();
      Logger.overrideLogger(true as never);
    }
    expect(errors).toEqual([]);
    expect(await denials()).toEqual([]);
  });

  it('a producer emitting to a key outside its rules gets NOPERM naming the stream', async () => {
    client = new RedisStreamsClient({ connection: url('producer'), commandTimeout: 5_000 });
    const error = await lastValueFrom(client.emit('invoices', { n: 1 })).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/stream "invoices".*NOPERM/);
    expect(await redis.client.exists('invoices')).toBe(0);
  });

  it('a scheduler: the producer rules schedule, plus the documented smembers/srem (list) and zrem/hdel/srem/multi/exec (remove)', async () => {
    const extra = ['+smembers', '+srem', '+zrem', '+hdel', '+multi', '+exec'];
    await redis.client.call('ACL', 'SETUSER', 'scheduler', 'reset', 'on', '>scheduler-pw', ...RULES.producer.split(' '), ...extra);
    await allowHandshake('scheduler');
    client = new RedisStreamsClient({ connection: `redis://scheduler:scheduler-pw@127.0.0.1:${redis.server.port}`, commandTimeout: 5_000 });
    const scheduler = new RedisStreamsScheduler(client);
    await scheduler.schedule('orders', { n: 1 }, { every: 'PT1H', key: 'hourly' });
    await scheduler.schedule('orders', { n: 2 }, { cron: '0 2 * * *', key: 'nightly' });
    expect((await scheduler.list('orders')).map((entry) => entry.key).sort()).toEqual(['hourly', 'nightly']);
    expect(await scheduler.remove('orders', 'hourly')).toBe(true);
    expect((await scheduler.get('orders', 'nightly'))?.data).toEqual({ n: 2 });
    expect(await scheduler.remove('orders', 'nightly')).toBe(true);
    expect(await denials()).toEqual([]);
  });

  it('a worker with the flow-control rules runs a rate-limited, globally limited handler with no ACL denial', async () => {
    await redis.client.call('ACL', 'SETUSER', 'flow-worker', 'reset', 'on', '>flow-pw', ...RULES.worker.split(' '), ...FLOW_RULES.split(' '));
    await allowHandshake('flow-worker');
    const errors: Error[] = [];
    const flow = await startServer(
      { connection: `redis://flow-worker:flow-pw@127.0.0.1:${redis.server.port}`, group: 'g', consumer: 'f1', blockMs: 100 },
      [LimitedAclController],
      [],
      (server) => server.on('error', (error: Error) => errors.push(error)),
    );
    try {
      client = new RedisStreamsClient({ connection: url('producer'), commandTimeout: 5_000 });
      for (let n = 0; n < 5; n++) await lastValueFrom(client.emit('orders', { n }));
      await waitFor(() => handled.length === 5, 'the five entries handled');
      await waitFor(async () => (await pendingCount(redis.client, 'orders', 'limited')) === 0, 'all acked');
    } finally {
      await flow.app.close();
    }
    expect(errors).toEqual([]);
    expect(await denials()).toEqual([]);
    // The permits all went back: nothing left held under the worker's name.
    expect(await redis.client.hgetall('{orders}:permits:limited')).toEqual({});
  });

  it('a worker without +hmget (rules from before it) still promotes: the script reads each body with HGET instead', async () => {
    const rules = RULES.worker.split(' ').filter((rule) => rule !== '+hmget');
    await redis.client.call('ACL', 'SETUSER', 'worker', 'reset', 'on', `>${PASSWORDS.worker}`, ...rules);
    await allowHandshake('worker');
    try {
      await startWorker();
      client = new RedisStreamsClient({ connection: url('producer'), commandTimeout: 5_000 });
      const hold = (await lastValueFrom(client.emit('orders', new RedisStreamsRecord({ item: 'later' }, { deliverAt: 0 })))) as string;
      await waitFor(() => handled.some((h) => (h.data as { item?: string }).item === 'later'), 'the held entry promoted and handled');
      expect(await redis.client.zscore('{orders}:delayed', hold)).toBeNull();
      expect(running!.errors).toEqual([]);
      // Two entries of ACL LOG (in the script, and at top level: the pause poll, which without
      // HMGET keeps the last pause state it read, none, and warns once), both of hmget alone.
      expect([...new Set(await denials())]).toEqual(['worker: command hmget']);
    } finally {
      await redis.client.call('ACL', 'SETUSER', 'worker', 'reset', 'on', `>${PASSWORDS.worker}`, ...RULES.worker.split(' '));
      await allowHandshake('worker');
    }
  });

  it('a worker whose rules predate delayed entries keeps running: no error event, its refused promotions leave held entries held', async () => {
    const delayedRules = ['+zrangebyscore', '+zrange', '+hget', '+hmget', '+zrem', '+hdel', '+zscore', '+zadd', '+hset', '+subscribe', '&{orders}:delayed-wake', '&{quotes}:delayed-wake', '~{orders}:delayed*', '~{quotes}:delayed*'];
    const legacy = RULES.worker.split(' ').filter((rule) => !delayedRules.includes(rule));
    await redis.client.call('ACL', 'SETUSER', 'legacy-worker', 'reset', 'on', '>legacy-pw', ...legacy);
    await allowHandshake('legacy-worker');
    Logger.overrideLogger(false);
    await startWorker({ connection: `redis://legacy-worker:legacy-pw@127.0.0.1:${redis.server.port}`, delayed: { interval: 50 } });
    client = new RedisStreamsClient({ connection: url('producer') });
    const hold = (await lastValueFrom(client.emit('orders', new RedisStreamsRecord({ n: 'held' }, { deliverAt: 0 })))) as string;
    await lastValueFrom(client.emit('orders', { n: 'now' }));
    await waitFor(() => handled.some((h) => (h.data as { n?: unknown }).n === 'now'), 'an ordinary event handled');
    // Refused rounds go on (Redis logs each denial) without an error event.
    const refusedRounds = async () => (await denials()).filter((denial) => denial.startsWith('legacy-worker:') && !denial.includes('subscribe')).length;
    await waitFor(async () => (await refusedRounds()) >= 2, 'two refused promotion rounds');
    expect(running!.errors).toEqual([]);
    expect(await redis.client.zscore('{orders}:delayed', hold)).not.toBeNull();
    expect(handled.some((h) => (h.data as { n?: unknown }).n === 'held')).toBe(false);
    Logger.overrideLogger(true as never);
  });

  it('a worker without the wake-up rules (from before it) warns once with the rule, and promotes by its interval rounds', async () => {
    const rules = RULES.worker.split(' ').filter((rule) => !['+subscribe', '&{orders}:delayed-wake', '&{quotes}:delayed-wake'].includes(rule));
    await redis.client.call('ACL', 'SETUSER', 'unwoken-worker', 'reset', 'on', '>unwoken-pw', ...rules);
    await allowHandshake('unwoken-worker');
    const warnings: string[] = [];
    const capture = { log: () => undefined, error: () => undefined, warn: (message: unknown) => warnings.push(String(message)), debug: () => undefined, verbose: () => undefined, fatal: () => undefined };
    try {
      // startServer's app is created with `logger: false`: the capture is put in once it is created, before listen().
      const moduleRef = await Test.createTestingModule({ controllers: [AclController] }).compile();
      const server = new RedisStreamsServer({ connection: `redis://unwoken-worker:unwoken-pw@127.0.0.1:${redis.server.port}`, group: 'g', consumer: 'w1', blockMs: 100, delayed: { interval: 100 } });
      const errors: Error[] = [];
      server.on('error', (error: Error) => errors.push(error));
      const app = moduleRef.createNestMicroservice({ strategy: server, logger: false });
      Logger.overrideLogger(capture as never);
      await app.listen();
      running = { app, server, errors, deadLetters: [] };
      await waitFor(() => warnings.some((warning) => warning.includes('delayed wake-up')), 'the wake-up warning');
      client = new RedisStreamsClient({ connection: url('producer') });
      await lastValueFrom(client.emit('orders', new RedisStreamsRecord({ n: 'interval' }, { delay: 50 })));
      await waitFor(() => handled.some((h) => (h.data as { n?: unknown }).n === 'interval'), 'the delayed event promoted by an interval round');
      expect(warnings.filter((warning) => warning.includes('delayed wake-up'))).toEqual([
        expect.stringContaining('grant +subscribe &{orders}:delayed-wake &{quotes}:delayed-wake (docs/security.md)'),
      ]);
      expect(running!.errors).toEqual([]);
      // The wake-up connection was ended: nobody listens on the channel.
      expect(await redis.client.call('PUBSUB', 'NUMSUB', '{orders}:delayed-wake')).toEqual(['{orders}:delayed-wake', 0]);
    } finally {
      Logger.overrideLogger(true as never);
    }
  });

  it('a worker refused the wake-up subscription at start still runs its first round at once, not an interval later', async () => {
    const rules = RULES.worker.split(' ').filter((rule) => !['+subscribe', '&{orders}:delayed-wake', '&{quotes}:delayed-wake'].includes(rule));
    await redis.client.call('ACL', 'SETUSER', 'unwoken-worker', 'reset', 'on', '>unwoken-pw', ...rules);
    await allowHandshake('unwoken-worker');
    client = new RedisStreamsClient({ connection: url('producer') });
    await lastValueFrom(client.emit('orders', new RedisStreamsRecord({ n: 'due-at-start' }, { delay: 1 })));
    Logger.overrideLogger(false);
    try {
      // The first round waits for the subscription, which is refused: the refusal runs it, not the minute's interval.
      running = {
        ...(await startServer({ connection: `redis://unwoken-worker:unwoken-pw@127.0.0.1:${redis.server.port}`, group: 'g', consumer: 'w1', blockMs: 100, delayed: { interval: 60_000 } }, [AclController])),
        errors: [],
        deadLetters: [],
      };
      await waitFor(() => handled.some((h) => (h.data as { n?: unknown }).n === 'due-at-start'), 'the entry due at start promoted by the first round', { timeout: 10_000 });
      expect(await redis.client.call('PUBSUB', 'NUMSUB', '{orders}:delayed-wake')).toEqual(['{orders}:delayed-wake', 0]);
    } finally {
      Logger.overrideLogger(true as never);
    }
  });

  it('a worker without XACK keeps running and loses nothing: error events name xack and the stream, entries stay pending, all handled once restored', async () => {
    Logger.overrideLogger(false);
    await startWorker({ recovery: { minIdleTime: 500, interval: 100 } });
    await redis.client.call('ACL', 'SETUSER', 'worker', '-xack');
    client = new RedisStreamsClient({ connection: url('producer'), commandTimeout: 5_000 });
    const ids: string[] = [];
    for (let n = 0; n < 5; n++) ids.push((await lastValueFrom(client.emit('orders', { n }))) as string);

    await waitFor(() => new Set(handled.map((h) => h.id)).size === 5, 'every entry handled once');
    await waitFor(() => running!.errors.length > 0, 'the error event');
    expect(running!.errors[0]!.message).toMatch(/XACK of \d+ entries on "orders" \(group "g"\) failed; they stay pending: NOPERM .*'xack'/);
    expect(await pendingCount(redis.client, 'orders', 'g')).toBe(5);

    await redis.client.call('ACL', 'SETUSER', 'worker', '+xack');
    await waitFor(async () => (await pendingCount(redis.client, 'orders', 'g')) === 0, 'all acked once XACK is allowed again', { timeout: 15_000 });
    expect([...new Set(handled.map((h) => h.id))].sort()).toEqual([...ids].sort());
    const more = (await lastValueFrom(client.emit('orders', { n: 5 }))) as string;
    await waitFor(() => handled.some((h) => h.id === more), 'a new entry after the restore');
    await waitFor(async () => (await pendingCount(redis.client, 'orders', 'g')) === 0, 'and acked');
    expect(await redis.client.xlen('{orders}:dead')).toBe(0);
    Logger.overrideLogger(true as never);
  });

  it('a worker that may not create its groups fails listen() with NOPERM naming the command', async (context) => {
    Logger.overrideLogger(false);
    // Removing one subcommand (`-xgroup|create`) is an ACL rule of Redis 7.0+; 6.2 refuses it.
    const refused = await redis.client.call('ACL', 'SETUSER', 'worker', '-xgroup|create').then(() => false, () => true);
    if (refused) context.skip('this server has no ACL subcommand removal (-xgroup|create; Redis 7.0+)');
    try {
      const failure = await startWorker({ startupTimeout: 5_000 }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(String(failure)).toMatch(/NOPERM.*'xgroup\|create'/);
    } finally {
      await redis.client.call('ACL', 'SETUSER', 'worker', '+xgroup|create');
      Logger.overrideLogger(true as never);
    }
  });

  it('a worker whose ACL forbids COMMAND learns the same capabilities (commands called bare) and writes nothing', async () => {
    const rules = RULES.worker.split(' ').filter((rule) => rule !== '+command|info');
    await redis.client.call('ACL', 'SETUSER', 'nocommand', 'reset', 'on', '>nocommand-pw', ...rules);
    await allowHandshake('nocommand');
    const limited = new Redis(`redis://nocommand:nocommand-pw@127.0.0.1:${redis.server.port}`);
    try {
      await expect(limited.call('COMMAND', 'INFO', 'XADD')).rejects.toThrow(/NOPERM/);
      const keysBefore = (await redis.client.keys('*')).sort();
      const learned = await probeCapabilities(limited);
      expect(learned).toEqual(await probeCapabilities(redis.client));
      expect(learned.unprobed).toEqual([]);
      expect(learned.xautoclaim).toBe(true);
      expect((await redis.client.keys('*')).sort()).toEqual(keysBefore);
    } finally {
      limited.disconnect();
      await redis.client.call('ACL', 'DELUSER', 'nocommand');
    }
  });

  describe('operator: the CLI', () => {
    beforeAll(ensureCompiled, 300_000);

    it('info, pending, claim, ack, dlq list / redrive / purge and delayed count / list / promote / remove run as the operator', async () => {
      const cli = async (...args: string[]) => {
        const run = await runCli([...args, '--url', url('operator')]);
        expect(run.stderr).toBe('');
        expect(run.code).toBe(0);
        return JSON.parse(run.stdout) as Record<string, unknown>;
      };
      await redis.client.xgroup('CREATE', 'orders', 'g', '0', 'MKSTREAM');
      const ids = [await redis.client.xadd('orders', '*', 'data', '1'), await redis.client.xadd('orders', '*', 'data', '2')];
      await redis.client.xreadgroup('GROUP', 'g', 'gone', 'STREAMS', 'orders', '>');

      expect(await cli('info', 'orders', '--group', 'g')).toMatchObject({ key: 'orders' });
      expect(await cli('pending', 'orders', 'g', '--entries')).toMatchObject({ entries: [{ id: ids[0] }, { id: ids[1] }] });
      // An entry waiting for its retry (held by the retry consumer, with its retry record): shown with the record.
      await redis.client.xgroup('CREATE', 'orders', 'r', '0');
      await redis.client.xreadgroup('GROUP', 'r', 'retry', 'COUNT', 1, 'STREAMS', 'orders', '>');
      await redis.client.set(`{orders}:retry:r:${ids[0]}`, JSON.stringify([1, 60_000, 'w1', 'Error: boom']));
      expect(await cli('pending', 'orders', 'r', '--entries')).toMatchObject({ entries: [{ id: ids[0], retry: { lastError: 'Error: boom' } }] });
      expect(await cli('claim', 'orders', 'g', 'operator', '--min-idle-time', '1')).toMatchObject({ ids });
      expect(await cli('ack', 'orders', 'g', ids[0]!)).toMatchObject({ acknowledged: 1 });

      // A dead letter (written as the worker's recovery would), then the dlq commands.
      await redis.client.xadd('{orders}:dead', '*', 'dlq:stream', 'orders', 'dlq:id', ids[1]!, 'dlq:group', 'g', 'dlq:consumer', 'operator',
        'dlq:deliveries', '2', 'dlq:reason', 'manual', 'dlq:error', '', 'dlq:at', '1', 'dlq:fields', '1', 'data', '2');
      const list = await cli('dlq', 'list', 'orders');
      expect(list.deadLetters).toHaveLength(1);
      expect(await cli('dlq', 'redrive', 'orders', '--all')).toMatchObject({ redriven: [{}] });
      expect(await redis.client.xlen('orders')).toBe(3);
      await redis.client.xadd('{orders}:dead', '*', 'dlq:stream', 'orders', 'dlq:id', ids[1]!, 'dlq:group', 'g', 'dlq:consumer', 'operator',
        'dlq:deliveries', '2', 'dlq:reason', 'manual', 'dlq:error', '', 'dlq:at', '1', 'dlq:fields', '0');
      expect(await cli('dlq', 'purge', 'orders', '--all')).toMatchObject({ purged: 1 });

      // Delayed entries (held as a producer would hold them), then the delayed commands and info.
      const producer = new RedisStreamsClient({ connection: url('producer') });
      const [later, soon] = [
        await lastValueFrom(producer.emit('orders', new RedisStreamsRecord({ n: 'later' }, { delay: 'PT1H' }))),
        await lastValueFrom(producer.emit('orders', new RedisStreamsRecord({ n: 'soon' }, { delay: 'PT1H' }))),
      ];
      await producer.close();
      expect(await cli('info', 'orders')).toMatchObject({ delayed: { held: 2, due: 0 } });
      expect(await cli('delayed', 'count', 'orders')).toMatchObject({ held: 2, due: 0 });
      expect(await cli('delayed', 'list', 'orders')).toMatchObject({ held: 2 });
      expect(await cli('delayed', 'promote', 'orders', soon as string)).toMatchObject({ promoted: [{ hold: soon }] });
      expect(await cli('delayed', 'remove', 'orders', later as string)).toMatchObject({ removed: 1 });

      // Pause and resume, and the pause shown by info.
      expect(await cli('pause', 'orders', 'g')).toMatchObject({ paused: true, changed: true });
      expect(await cli('info', 'orders')).toMatchObject({ paused: [{ group: 'g' }] });
      expect(await cli('resume', 'orders', 'g')).toMatchObject({ paused: false, changed: true });
      expect(await denials()).toEqual([]);
    }, 240_000); // seventeen CLI processes, each starting Node: slow on a loaded machine

    it('entry and cancel run as the operator with the lifecycle rules', async () => {
      await redis.client.call('ACL', 'SETUSER', 'operator', ...LIFECYCLE_OPERATOR_RULES.split(' '));
      try {
        await redis.client.xgroup('CREATE', 'orders', 'g', '0', 'MKSTREAM');
        const id = (await redis.client.xadd('orders', '*', 'data', '1')) as string;
        await redis.client.xreadgroup('GROUP', 'g', 'w1', 'STREAMS', 'orders', '>');
        await redis.client.set(`{orders}:progress:${id}`, JSON.stringify({ value: { step: 3 }, delivery: 1, at: new Date().toISOString() }), 'PX', 60_000);
        const cli = async (...args: string[]) => {
          const run = await runCli([...args, '--url', url('operator')]);
          expect([run.code, run.stderr]).toEqual([0, '']);
          return JSON.parse(run.stdout) as Record<string, unknown>;
        };
        expect(await cli('entry', 'orders', id)).toMatchObject({ state: 'running', progress: { value: { step: 3 } } });
        expect(await cli('cancel', 'orders', id, '--reason', 'operator says no')).toMatchObject({ cancelled: true, previous: 'pending' });
        expect(await redis.client.get(`{orders}:cancelled:${id}`)).toBe('operator says no');
        expect(await denials()).toEqual([]);
      } finally {
        await redis.client.call('ACL', 'SETUSER', 'operator', 'reset', 'on', `>${PASSWORDS.operator}`, ...RULES.operator.split(' '));
        await allowHandshake('operator');
      }
    }, 60_000);

    it("top: DELAYED and DUE need zcard, zcount and time on {orders}:delayed; refused (rules from before delayed entries), they show '-' and the rest does", async () => {
      // top reads the dead letters' length too (xlen), which the operator rules above do not grant.
      const viewer = `${CONNECT} +xinfo|stream +xinfo|groups +xpending +xlen +exists +get +time`;
      await redis.client.call('ACL', 'SETUSER', 'top-viewer', 'reset', 'on', '>viewer-pw', ...`${viewer} +zcard +zcount +hgetall ~orders ~{orders}:dead ~{orders}:partitions ~{orders}:delayed ~{orders}:paused`.split(' '));
      await redis.client.call('ACL', 'SETUSER', 'legacy-viewer', 'reset', 'on', '>legacy-pw', ...`${viewer} ~orders ~{orders}:dead ~{orders}:partitions`.split(' '));
      for (const user of ['top-viewer', 'legacy-viewer']) await allowHandshake(user);
      await redis.client.xgroup('CREATE', 'orders', 'g', '0', 'MKSTREAM');
      await redis.client.zadd('{orders}:delayed', 0, 'due-hold', Date.now() + 3_600_000, 'later-hold');
      const top = async (user: string, password: string) => {
        const run = await runCli(['top', 'orders', '--iterations', '1', '--url', `redis://${user}:${password}@127.0.0.1:${redis.server.port}`]);
        expect([run.code, run.stderr]).toEqual([0, '']);
        return (JSON.parse(run.stdout) as { rows: Record<string, unknown>[] }).rows;
      };
      expect(await top('top-viewer', 'viewer-pw')).toEqual([expect.objectContaining({ stream: 'orders', group: 'g', length: 0, delayedHeld: 2, delayedDue: 1 })]);
      expect(await top('legacy-viewer', 'legacy-pw')).toEqual([expect.objectContaining({ stream: 'orders', group: 'g', length: 0, deadLetters: 0, delayedHeld: null, delayedDue: null })]);
      expect((await denials()).filter((denial) => denial.startsWith('top-viewer:'))).toEqual([]);
    }, 60_000);
  });
});

/**
 * What every role adds on a Redis Cluster (docs/security.md): ioredis' Cluster learns the slots
 * (CLUSTER SLOTS), checks the cluster is up (CLUSTER INFO) and sends READONLY to the replicas it
 * connects to (a refused one is ignored by ioredis but logged as a denial, when it happens in the run).
 */
const CLUSTER_RULES = '+cluster|slots +cluster|info +readonly';

describe('ACL least privilege on a Redis Cluster: the documented rules plus the Cluster ones', () => {
  const redis = useRedisCluster({ masters: 3, replicas: 1 });
  const connection = (user: keyof typeof PASSWORDS) => ({
    cluster: { nodes: redis.cluster.urls.map((url) => url.replace('redis://', `redis://${user}:${PASSWORDS[user]}@`)) },
  });

  /** Runs `work` on a plain admin connection to every node of the cluster. */
  async function onEveryNode<T>(work: (admin: Redis) => Promise<T>): Promise<T[]> {
    return Promise.all(
      redis.cluster.nodes.map(async (node) => {
        const admin = redis.cluster.nodeClient(node);
        try {
          return await work(admin);
        } finally {
          admin.disconnect();
        }
      }),
    );
  }

  it('worker + producer: an emit handled once, a send answered, nothing pending, no ACL denial on any node', async () => {
    await onEveryNode(async (admin) => {
      for (const user of ['worker', 'producer'] as const) {
        const rules = [...RULES[user].split(' '), ...CLUSTER_RULES.split(' ')];
        await admin.call('ACL', 'SETUSER', user, 'reset', 'on', `>${PASSWORDS[user]}`, ...rules);
        await allowHandshakeOn(admin, user);
      }
      await admin.call('ACL', 'LOG', 'RESET');
    });
    handled.length = 0;
    const errors: Error[] = [];
    const admin = redis.cluster.client();
    let running: RunningServer | undefined;
    let client: RedisStreamsClient | undefined;
    try {
      running = await startServer(
        { connection: connection('worker'), group: 'g', consumer: 'w1', blockMs: 100, recovery: { minIdleTime: 500, interval: 100 } },
        [AclController],
        [],
        (server) => server.on('error', (error: Error) => errors.push(error)),
      );
      client = new RedisStreamsClient({ connection: connection('producer'), commandTimeout: 5_000 });
      const id = await lastValueFrom(client.emit('orders', { n: 1 }));
      expect(await lastValueFrom(client.send('quotes', [1, 2, 3]))).toBe(6);
      await waitFor(() => handled.length === 1, 'the event handled');
      expect(handled).toEqual([{ data: { n: 1 }, id, deliveryCount: 1 }]);
      await waitFor(async () => Number(((await admin.xpending('orders', 'g')) as [number])[0]) === 0, 'nothing pending');
    } finally {
      await client?.close();
      await running?.app.close();
      admin.disconnect();
    }
    expect(errors).toEqual([]);
    expect((await onEveryNode(denialsOf)).flat()).toEqual([]);
  });

  /**
   * A user lacking one of the Cluster rules: ioredis retries a refused CLUSTER SLOTS (or its ready
   * check's refused CLUSTER INFO) until the deadline; the worker, the producer and the CLI must
   * instead fail as soon as the NOPERM reply is seen, naming the rule to add. Deadlines are long
   * (20 s) and the failures must come within half of them.
   */
  describe.each([
    ['cluster|slots', 'CLUSTER SLOTS'],
    ['cluster|info', 'CLUSTER INFO'],
  ])('a user without +%s', (rule, command) => {
    const DEADLINE_MS = 20_000;
    const refusal = (user: string) => `the ACL user "${user}" may not run ${command}: add +${rule} (docs/security.md)`;

    /** How `read` ends: undefined when it answers, its error when it fails, 'no answer' after DEADLINE_MS. */
    const outcome = async (read: Promise<unknown>): Promise<Error | undefined> => {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<Error>((resolve) => (timer = setTimeout(() => resolve(new Error('no answer')), DEADLINE_MS)));
      try {
        return await Promise.race([read.then(() => undefined, (error: unknown) => error as Error), deadline]);
      } finally {
        clearTimeout(timer);
      }
    };

    beforeEach(async () => {
      const clusterRules = CLUSTER_RULES.split(' ').filter((each) => each !== `+${rule}`);
      await onEveryNode(async (admin) => {
        for (const user of ['worker', 'producer', 'operator'] as const) {
          await admin.call('ACL', 'SETUSER', user, 'reset', 'on', `>${PASSWORDS[user]}`, ...RULES[user].split(' '), ...clusterRules);
          await allowHandshakeOn(admin, user);
        }
      });
    });

    it('worker: listen() fails well within startupTimeout, naming the rule', async () => {
      const server = new RedisStreamsServer({ connection: connection('worker'), group: 'g', consumer: 'w1', recovery: false, startupTimeout: DEADLINE_MS });
      server.addHandler('orders', async () => undefined, true);
      server.on('error', () => undefined);
      const started = Date.now();
      const failure = await new Promise<Error | undefined>((resolve) => void server.listen((error?: unknown) => resolve(error as Error | undefined)));
      const elapsed = Date.now() - started;
      await server.close();
      expect(failure?.message).toContain(refusal('worker'));
      expect(elapsed).toBeLessThan(DEADLINE_MS / 2);
    }, 60_000);

    it('producer: the first emit fails well within commandTimeout, naming the rule', async () => {
      const client = new RedisStreamsClient({ connection: connection('producer'), commandTimeout: DEADLINE_MS });
      try {
        const started = Date.now();
        const failure = await lastValueFrom(client.emit('orders', { n: 1 })).then(
          () => undefined,
          (error: unknown) => error as Error,
        );
        const elapsed = Date.now() - started;
        expect(failure?.message).toContain(refusal('producer'));
        expect(elapsed).toBeLessThan(DEADLINE_MS / 2);
      } finally {
        await client.close();
      }
    }, 60_000);

    it("module: the shared connection's commands (StreamInspectionService) fail at once, naming the rule, instead of waiting", async () => {
      const app = await Test.createTestingModule({ imports: [RedisStreamsModule.forRoot({ connection: connection('operator') })] }).compile();
      try {
        const inspector = app.get(StreamInspectionService);
        const started = Date.now();
        // The first waits for the refusal; the second is sent once it is known.
        const first = await outcome(inspector.groups('orders'));
        const later = await outcome(inspector.stream('orders'));
        expect(first?.message).toContain(refusal('operator'));
        expect(later?.message).toContain(refusal('operator'));
        // An error object of its own each (one changed by its caller changes no other).
        expect(later).not.toBe(first);
        expect(Date.now() - started).toBeLessThan(DEADLINE_MS / 2);
        // ioredis reconnects on: with the rule added, the same connection answers.
        const admin = redis.cluster.client();
        await admin.xadd('orders', '*', 'n', '1').finally(() => admin.disconnect());
        await onEveryNode((node) => node.call('ACL', 'SETUSER', 'operator', `+${rule}`));
        await waitFor(async () => Array.isArray(await inspector.groups('orders').catch(() => undefined)), 'the groups once the rule is added');
      } finally {
        await app.close();
      }
    }, 60_000);

    it("module: the shared connection's MULTI (the dashboard's remove delayed) and pipelines fail at once, naming the rule; with the rule added its MULTI runs", async () => {
      const app = await Test.createTestingModule({ imports: [RedisStreamsModule.forRoot({ connection: connection('operator') })] }).compile();
      try {
        const shared = app.get<Redis>(REDIS_STREAMS_CONNECTION);
        const started = Date.now();
        // Sent before the refusal is known (they wait for it), then after.
        const first = await Promise.all([outcome(removeDelayed(shared, 'orders', ['h1'])), outcome(shared.pipeline().zcard('{orders}:delayed').exec())]);
        const later = await Promise.all([outcome(shared.multi().hset('{orders}:delayed-refused', 'n', '1').exec()), outcome(shared.pipeline().zcard('{orders}:delayed').exec())]);
        expect([...first, ...later].map((error) => error?.message)).toEqual(Array.from({ length: 4 }, () => expect.stringContaining(refusal('operator'))));
        expect(Date.now() - started).toBeLessThan(DEADLINE_MS / 2);
        // ioredis reconnects on: with the rule added, the same connection's MULTI runs.
        await onEveryNode((node) => node.call('ACL', 'SETUSER', 'operator', `+${rule}`));
        await waitFor(async () => (await removeDelayed(shared, 'orders', ['h1']).catch(() => undefined))?.removed === 0, 'remove delayed once the rule is added');
        expect(await shared.pipeline().zcard('{orders}:delayed').zcard('{orders}:delayed').exec()).toEqual([
          [null, expect.any(Number)],
          [null, expect.any(Number)],
        ]);
        // The MULTI its caller was told failed never ran.
        expect(await shared.exists('{orders}:delayed-refused')).toBe(0);
      } finally {
        await app.close();
      }
    }, 60_000);

    it("module: the shared connection's multi().execBuffer() (ioredis' deprecated buffer exec) fails at once, naming the rule; a pipeline's execBuffer() sends nothing", async () => {
      const app = await Test.createTestingModule({ imports: [RedisStreamsModule.forRoot({ connection: connection('operator') })] }).compile();
      /** ioredis 6 has `execBuffer` on its pipelines at run time only (deprecated, untyped). */
      type Buffered = { execBuffer(): unknown; exec(): Promise<unknown> };
      try {
        const shared = app.get<Redis>(REDIS_STREAMS_CONNECTION);
        const started = Date.now();
        const refused = shared.multi().hset('{orders}:delayed-buffered', 'n', '1') as unknown as Buffered;
        expect((await outcome(refused.execBuffer() as Promise<unknown>))?.message).toContain(refusal('operator'));
        // A plain pipeline's execBuffer() only queues an EXEC and returns the pipeline: nothing
        // waits; its exec() is what sends, decided as a whole.
        const pipeline = shared.pipeline().zcard('{orders}:delayed') as unknown as Buffered;
        expect(pipeline.execBuffer()).toBe(pipeline);
        expect((await outcome(pipeline.exec()))?.message).toContain(refusal('operator'));
        expect(Date.now() - started).toBeLessThan(DEADLINE_MS / 2);
        // With the rule added, the same connection's execBuffer() runs its MULTI; the refused one never ran.
        await onEveryNode((node) => node.call('ACL', 'SETUSER', 'operator', `+${rule}`));
        const runs = () => (shared.multi().hset('{orders}:delayed-buffered-later', 'n', '1') as unknown as Buffered).execBuffer() as Promise<unknown>;
        await waitFor(async () => (await runs().catch(() => undefined)) !== undefined, 'multi().execBuffer() once the rule is added');
        expect(await shared.hget('{orders}:delayed-buffered-later', 'n')).toBe('1');
        expect(await shared.exists('{orders}:delayed-buffered')).toBe(0);
      } finally {
        await app.close();
      }
    }, 60_000);

    it("module: with enableAutoPipelining, the shared connection's commands fail at once, naming the rule", async () => {
      const autoPipelined = { cluster: { ...connection('operator').cluster, options: { enableAutoPipelining: true } } };
      const app = await Test.createTestingModule({ imports: [RedisStreamsModule.forRoot({ connection: autoPipelined })] }).compile();
      try {
        const inspector = app.get(StreamInspectionService);
        const started = Date.now();
        expect((await outcome(inspector.groups('orders')))?.message).toContain(refusal('operator'));
        expect((await outcome(inspector.stream('orders')))?.message).toContain(refusal('operator'));
        expect(Date.now() - started).toBeLessThan(DEADLINE_MS / 2);
      } finally {
        await app.close();
      }
    }, 60_000);

    it.each(ADAPTERS)("dashboard (%s): its reads answer 503 at once naming the rule, with no password and no node's address", async (adapter) => {
      const app = await startDashboardApp(redis.cluster.urls[0]!, { streams: ['orders'] }, adapter, { connection: connection('operator'), worker: false });
      try {
        const started = Date.now();
        const answers = [await getJson(app, 'overview'), await getJson(app, 'dead-letters', { stream: 'orders' })];
        expect(Date.now() - started).toBeLessThan(DEADLINE_MS / 2);
        // Where the connection goes is masked: no dashboard answer carries a host or port.
        const message = `cannot connect to Redis at ***: ${refusal('operator')}`;
        expect(answers.map(({ status, body }) => ({ status, body }))).toEqual(Array.from({ length: 2 }, () => ({ status: 503, body: { statusCode: 503, error: 'Service Unavailable', message } })));
        const text = JSON.stringify(answers.map(({ body }) => body));
        expect(text).not.toContain(PASSWORDS.operator);
        for (const node of redis.cluster.nodes) expect(text).not.toContain(String(node.port));
      } finally {
        await app.close();
      }
    }, 60_000);

    it('CLI: fails well within --timeout with one line naming the rule', async () => {
      await ensureCompiled();
      const started = Date.now();
      const run = await runCli(['info', 'orders', '--url', connection('operator').cluster.nodes[0]!, '--timeout', String(DEADLINE_MS)], {}, { timeoutMs: 2 * DEADLINE_MS });
      const elapsed = Date.now() - started;
      expect(run.code).toBe(1);
      expect(run.stderr.trim().split('\n')).toEqual([expect.stringContaining(refusal('operator'))]);
      expect(elapsed).toBeLessThan(DEADLINE_MS / 2);
    }, 300_000);
  });

  it('operator: the CLI finds the cluster from one node and runs info and pending with no ACL denial', async () => {
    await ensureCompiled();
    await onEveryNode(async (admin) => {
      await admin.call('ACL', 'SETUSER', 'operator', 'reset', 'on', `>${PASSWORDS.operator}`, ...RULES.operator.split(' '), ...CLUSTER_RULES.split(' '));
      await allowHandshakeOn(admin, 'operator');
      await admin.call('ACL', 'LOG', 'RESET');
    });
    const admin = redis.cluster.client();
    try {
      await admin.del('orders');
      await admin.xgroup('CREATE', 'orders', 'ops', '0', 'MKSTREAM');
      const id = await admin.xadd('orders', '*', 'data', '1');
      await admin.xreadgroup('GROUP', 'ops', 'gone', 'STREAMS', 'orders', '>');
      const cli = async (...args: string[]) => {
        const run = await runCli([...args, '--url', connection('operator').cluster.nodes[0]!]);
        expect(run.stderr).toBe('');
        expect(run.code).toBe(0);
        return JSON.parse(run.stdout) as Record<string, unknown>;
      };
      expect(await cli('info', 'orders', '--group', 'ops')).toMatchObject({ key: 'orders' });
      expect(await cli('pending', 'orders', 'ops', '--entries')).toMatchObject({ entries: [{ id }] });
    } finally {
      admin.disconnect();
    }
    expect((await onEveryNode(denialsOf)).flat()).toEqual([]);
  }, 300_000);
});
