import { Controller } from '@nestjs/common';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount } from '../helpers/stream-state.js';
import { capabilitiesOf } from '../helpers/capabilities.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const audited: number[] = [];
const auditedLate: number[] = [];

@Controller()
class CalcController {
  @MessagePattern('calc')
  calc(@Payload() n: number): number {
    return n * 2;
  }

  @EventPattern<string>('calc', { group: 'audit' })
  audit(@Payload() n: number): void {
    audited.push(n);
  }

  // Declared before the message handler of its pattern: Nest alone would drop it.
  @EventPattern<string>('calc-late', { group: 'audit' })
  auditLate(@Payload() n: number): void {
    auditedLate.push(n);
  }

  @MessagePattern('calc-late')
  calcLate(@Payload() n: number): number {
    return n + 1;
  }
}

@Controller()
class SumController {
  @MessagePattern('dup', { group: 'a' })
  sumA(@Payload() n: number): number {
    return n;
  }
}

@Controller()
class OtherSumController {
  @MessagePattern('dup', { group: 'b' })
  sumB(@Payload() n: number): number {
    return -n;
  }
}

/** XADDs to a stream so far (deletions and trims do not lower it). Redis ≥ 7.0. */
async function entriesAdded(redis: ReturnType<typeof useRedisServer>['client'], stream: string): Promise<number> {
  const info = (await redis.call('XINFO', 'STREAM', stream)) as unknown[];
  const at = info.indexOf('entries-added');
  if (at < 0) throw new Error('XINFO STREAM has no entries-added (Redis < 7.0)');
  return Number(info[at + 1]);
}

describe('request/reply on a stream that event handlers of other groups also read', () => {
  const redis = useRedisServer();
  let running: RunningServer;
  let client: RedisStreamsClient;

  beforeAll(async () => {
    running = await startServer({ connection: redis.server.url, group: 'calc-svc', blockMs: 200 }, [CalcController]);
    client = new RedisStreamsClient({ connection: redis.server.url, timeout: 10_000 });
  });
  afterAll(async () => {
    await client?.close();
    await running?.app.close();
  });

  it('every send is answered once by the message handler; the other group\'s event handler sees every request', async () => {
    const inputs = Array.from({ length: 60 }, (_, i) => i);
    const concurrent = await Promise.all(inputs.slice(0, 40).map((n) => lastValueFrom(client.send<number>('calc', n))));
    const sequential: number[] = [];
    for (const n of inputs.slice(40)) sequential.push(await lastValueFrom(client.send<number>('calc', n)));

    expect([...concurrent, ...sequential]).toEqual(inputs.map((n) => n * 2));
    await waitFor(() => audited.length >= inputs.length, 'the audit handler to see every request');
    expect([...audited].sort((a, b) => a - b)).toEqual(inputs);
    // Exactly one reply per request: the audit group never writes to the reply stream. Counting the
    // replies written needs XINFO STREAM entries-added (the lagTracking capability, Redis 7.0+):
    // the client removes replies it read, so XLEN cannot tell.
    if ((await capabilitiesOf(redis.client)).lagTracking) expect(await entriesAdded(redis.client, client.replyStream)).toBe(inputs.length);
    await waitFor(
      async () => (await pendingCount(redis.client, 'calc', 'calc-svc')) + (await pendingCount(redis.client, 'calc', 'audit')) === 0,
      'both groups to ack every request',
    );
  });

  it('an event handler declared before the message handler of its pattern still runs', async () => {
    const inputs = [1, 2, 3, 4, 5];
    const answers = await Promise.all(inputs.map((n) => lastValueFrom(client.send<number>('calc-late', n))));
    expect(answers).toEqual([2, 3, 4, 5, 6]);
    await waitFor(() => auditedLate.length >= inputs.length, 'the late-declared audit handler');
    expect([...auditedLate].sort((a, b) => a - b)).toEqual(inputs);
    const groups = (await redis.client.xinfo('GROUPS', 'calc-late')) as unknown[][];
    expect(groups.map((row) => row[row.indexOf('name') + 1]).sort()).toEqual(['audit', 'calc-svc']);
  });

  it('two message handlers of one pattern are refused at startup, naming the pattern', async () => {
    const outcome = await startServer({ connection: redis.server.url, group: 'dup-svc', consumer: 'dup' }, [SumController, OtherSumController]).then(
      async (started) => {
        await started.app.close();
        return 'listening';
      },
      (error: unknown) => error,
    );
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toMatch(/"dup".*two @MessagePattern/);
  });
});
