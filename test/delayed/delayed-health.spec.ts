import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { promoteDue } from '../../src/delayed/promote.js';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { RedisStreamsHealthIndicator, RedisStreamsHealthModule } from '../../src/health/index.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

const STREAM = 'health-later';

@Controller()
class LaterController {
  @EventPattern<string>(STREAM)
  onLater(): void {}
}

interface Report {
  status: string;
  servers: { problems: string[]; streams?: Record<string, unknown>[] }[];
}

describe('health threshold delayedDue: delayed entries due and not promoted', () => {
  const redis = useRedisServer();
  let client: RedisStreamsClient;
  let running: RunningServer;
  let indicator: RedisStreamsHealthIndicator;

  beforeAll(async () => {
    client = new RedisStreamsClient({ connection: redis.server.url });
    // This worker promotes nothing: what comes due stays due.
    running = await startServer({ connection: redis.server.url, group: 'g', consumer: 'h', blockMs: 200, delayed: false }, [LaterController]);
    indicator = (await Test.createTestingModule({ imports: [RedisStreamsHealthModule] }).compile()).get(RedisStreamsHealthIndicator);
  });
  afterAll(async () => {
    await client.close();
    await running.app.close();
  });

  const check = async (thresholds: object): Promise<Report> =>
    (await indicator.isHealthy('delayed', { server: running.server, thresholds })).delayed as unknown as Report;

  it('down while more are due than allowed, naming the stream and the count; up once promoted', async () => {
    for (const options of [{ deliverAt: 0 }, { deliverAt: 1 }, { delay: 'PT1H' }]) await lastValueFrom(client.emit(STREAM, new RedisStreamsRecord({}, options)));
    const down = await check({ delayedDue: 1 });
    expect(down.status).toBe('down');
    expect(down.servers[0]?.problems).toEqual([`"${STREAM}" (group "g"): 2 delayed entries due and not promoted, above 1`]);
    expect(down.servers[0]?.streams?.[0]).toMatchObject({ stream: STREAM, delayedDue: 2 });
    expect((await check({ delayedDue: 2 })).status).toBe('up');
    await promoteDue(redis.client, STREAM);
    expect((await check({ delayedDue: 0 })).status).toBe('up');
  });

  it('not asked for without its threshold (the counts keep their shape)', async () => {
    const report = await check({ pending: 100 });
    expect(Object.keys(report.servers[0]?.streams?.[0] ?? {})).not.toContain('delayedDue');
  });

  it('a bad delayedDue is an option error naming it', async () => {
    const error = await indicator.isHealthy('x', { thresholds: { delayedDue: -1 } }).then(() => undefined, (failure: unknown) => failure);
    expect(error).toBeInstanceOf(RedisStreamsOptionError);
    expect((error as RedisStreamsOptionError).option).toBe('thresholds.delayedDue');
  });
});
