import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { RedisStreamsCapabilityError, RedisStreamsOptionError } from '../../src/errors.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount } from '../helpers/stream-state.js';
import { capabilitiesOf } from '../helpers/capabilities.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const handled: string[] = [];

@Controller()
class LaggingController {
  @EventPattern<string>('lagging')
  onEntry(_data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    handled.push(ctx.getId());
  }
}

const EMITS = 2_000;
const MAX_LEN = 3;

describe('client trim { onlyAcked }: trimming that never drops unacknowledged entries', () => {
  const redis = useRedisServer();
  const clients: RedisStreamsClient[] = [];
  let running: RunningServer | undefined;
  const client = (options: ConstructorParameters<typeof RedisStreamsClient>[0]) => {
    const created = new RedisStreamsClient({ connection: redis.server.url, ...options });
    clients.push(created);
    return created;
  };
  afterEach(async () => {
    await running?.app.close();
    running = undefined;
    await Promise.all(clients.splice(0).map((c) => c.close()));
    handled.length = 0;
    await redis.client.flushall();
  });

  it('is validated like any trim option', () => {
    expect(() => client({ trim: { maxLen: 1, onlyAcked: 'yes' as unknown as boolean } })).toThrow(RedisStreamsOptionError);
    expect(() => client({ trim: { maxLen: 1, onlyAcked: 'yes' as unknown as boolean } })).toThrow(/"trim\.onlyAcked": must be true or false/);
  });

  it('keeps every entry a lagging group has not acknowledged (8.2+), or is a named error at the first connect', async () => {
    const { deletionPolicies } = await capabilitiesOf(redis.client);
    // The group exists before the emits and reads nothing yet: it lags behind the whole run.
    await redis.client.xgroup('CREATE', 'lagging', 'g', '0', 'MKSTREAM');
    const producer = client({ trim: { maxLen: MAX_LEN, exact: true, onlyAcked: true } });
    if (!deletionPolicies) {
      const failure = await producer.connect().catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(RedisStreamsCapabilityError);
      expect(failure).toMatchObject({ option: 'trim.onlyAcked', capability: 'deletionPolicies', since: '8.2' });
      await expect(lastValueFrom(producer.emit('lagging', { n: 1 }))).rejects.toThrow(/"trim\.onlyAcked" needs XADD … ACKED \(capability "deletionPolicies", Redis 8\.2/);
      expect(await redis.client.xlen('lagging')).toBe(0);
      return;
    }
    const ids = await Promise.all(Array.from({ length: EMITS }, (_, n) => lastValueFrom(producer.emit('lagging', { n }))));
    // Far above MAXLEN 3: nothing the group still needs was trimmed.
    expect(await redis.client.xlen('lagging')).toBe(EMITS);

    running = await startServer({ connection: redis.server.url, group: 'g', consumer: 'w1', recovery: false, blockMs: 200 }, [LaggingController]);
    await waitFor(() => handled.length >= EMITS, `${EMITS} entries to be handled`);
    await waitFor(async () => (await pendingCount(redis.client, 'lagging', 'g')) === 0, 'every entry to be acked');
    expect(new Set(handled).size).toBe(EMITS);
    expect([...handled].sort()).toEqual([...(ids as string[])].sort());

    // Once the group acknowledged them, the next XADD trims down to MAXLEN.
    await lastValueFrom(producer.emit('lagging', { n: EMITS }));
    expect(await redis.client.xlen('lagging')).toBe(MAX_LEN);
  });

  it('without onlyAcked the same run drops what the group never read (the loss it prevents)', async () => {
    await redis.client.xgroup('CREATE', 'lagging', 'g', '0', 'MKSTREAM');
    const producer = client({ trim: { maxLen: MAX_LEN, exact: true } });
    await Promise.all(Array.from({ length: 50 }, (_, n) => lastValueFrom(producer.emit('lagging', { n }))));
    expect(await redis.client.xlen('lagging')).toBe(MAX_LEN);
  });

  it('a per-call trim with onlyAcked fails that emit, named, on a server without it; it trims ACKED on one with it', async () => {
    const { deletionPolicies } = await capabilitiesOf(redis.client);
    await redis.client.xgroup('CREATE', 'lagging', 'g', '0', 'MKSTREAM');
    const producer = client({ trim: false });
    await producer.connect();
    const emit = (n: number) => lastValueFrom(producer.emit('lagging', new RedisStreamsRecord({ n }, { trim: { maxLen: 1, exact: true, onlyAcked: true } })));
    if (!deletionPolicies) {
      const failure = await emit(1).catch((error: unknown) => error);
      expect((failure as Error).cause).toBeInstanceOf(RedisStreamsCapabilityError);
      expect(await redis.client.xlen('lagging')).toBe(0);
      return;
    }
    for (let n = 0; n < 10; n++) await emit(n);
    expect(await redis.client.xlen('lagging')).toBe(10);
  });
});
