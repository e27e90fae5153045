import { readFileSync } from 'node:fs';
import { Controller, Logger } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { delayedKeys } from '../../src/delayed/delayed-keys.js';
import { delayedScriptSource } from '../../src/delayed/scripts/loader.js';
import { redisNow } from '../../src/redis/server-time.js';
import { delayedWakeChannel } from '../../src/delayed/wake-channel.js';
import { DelayedPromoter } from '../../src/server/delayed-promoter.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/**
 * What one promotion round costs Redis (docs/scheduling.md, "Who promotes"): every worker runs a
 * round per stream at least every `interval`, nearly always over a schedule with nothing due, so
 * such a round is one script call; a stream with a backlog still gets three in flight.
 * The rounds here come at start and then after a minute: only the first one runs in a test.
 */
const ONE_ROUND = { intervalMs: 60_000, batch: 100, maxPages: 10 };

@Controller()
class StartController {
  @EventPattern<string>('started')
  onStarted(): void {}
}

describe('delayed promotion: script calls per round', () => {
  const redis = useRedisServer();
  const promoters: DelayedPromoter[] = [];
  /** The promoters' own connections: a promoter does not own its connection, so the spec closes them. */
  const connections: Redis[] = [];
  let client: RedisStreamsClient | undefined;
  let worker: RunningServer | undefined;

  afterEach(async () => {
    for (const promoter of promoters.splice(0)) promoter.stop();
    for (const connection of connections.splice(0)) connection.disconnect();
    await worker?.app.close();
    worker = undefined;
    await client?.close();
    client = undefined;
  });

  /** Promotion script runs Redis counted since the last CONFIG RESETSTAT (EVAL and EVALSHA, NOSCRIPT refusals left out). */
  const scriptRuns = async (): Promise<number> => {
    const info = await redis.client.info('commandstats');
    let runs = 0;
    for (const command of ['eval', 'evalsha']) {
      const line = new RegExp(`^cmdstat_${command}:calls=(\\d+).*?failed_calls=(\\d+)`, 'm').exec(info);
      if (line !== null) runs += Number(line[1]) - Number(line[2]);
    }
    return runs;
  };

  const startPromoter = (stream: string): void => {
    const connection = redis.client.duplicate();
    connections.push(connection);
    const promoter = new DelayedPromoter(connection, [stream], ONE_ROUND, new Logger('promoter-spec'), (error) => {
      throw error;
    });
    promoters.push(promoter);
    promoter.start();
  };

  it('a round over a stream with nothing held is one script call, not three', async () => {
    await redis.client.config('RESETSTAT');
    startPromoter('idle-stream');
    await waitFor(async () => (await scriptRuns()) > 0, 'the first round');
    // The calls of a round go out in one socket write: had it sent three, Redis ran all three before answering INFO.
    expect(await scriptRuns()).toBe(1);
  });

  it('a backlog of due entries is still moved within one round, three calls in flight once a call moved a full batch', async () => {
    client = new RedisStreamsClient({ connection: redis.server.url });
    await client.connect();
    const due = 350;
    await Promise.all(Array.from({ length: due }, (_, n) => lastValueFrom(client!.emit('behind', new RedisStreamsRecord({ n }, { delay: 1 })))));
    const allDue = (await redisNow(redis.client)) + 2;
    await waitFor(async () => (await redisNow(redis.client)) >= allDue, 'every hold due (1 ms each, on Redis’ clock)');
    await redis.client.config('RESETSTAT');
    startPromoter('behind');
    await waitFor(async () => (await redis.client.xlen('behind')) === due, `all ${due} entries promoted in the first round`);
    // 100 + 100 + 100 + 50, plus at most the two calls in flight beside the last one.
    const runs = await scriptRuns();
    expect(runs).toBeGreaterThanOrEqual(4);
    expect(runs).toBeLessThanOrEqual(6);
    expect(await redis.client.zcard(delayedKeys('behind').schedule)).toBe(0);
  });

  it("a worker's start runs one round, not two: the wake-up subscription's round is the first", async () => {
    // Each run of the promote script is one EVAL of its text or EVALSHA of its SHA; loaded before the
    // worker starts, no EVALSHA is refused (NOSCRIPT) and sent again as an EVAL: one run, one command.
    const promoteSha = (await redis.client.script('LOAD', delayedScriptSource('nrsDelayedPromote'))) as string;
    // MONITOR quotes a script's text (its newlines as \n): an EVAL is known by promote.lua's first line.
    const promoteLua = readFileSync(new URL('../../src/delayed/scripts/promote.lua', import.meta.url), 'utf8');
    const promoteFirstLine = promoteLua.slice(0, promoteLua.indexOf('\n'));
    const monitor = await redis.client.monitor();
    let promoteRuns = 0;
    let marked = false;
    monitor.on('monitor', (_time: string, args: string[]) => {
      const [command, first] = args.map(String);
      const name = command?.toLowerCase();
      if ((name === 'evalsha' && first === promoteSha) || (name === 'eval' && first?.includes(promoteFirstLine) === true)) promoteRuns++;
      if (name === 'echo' && first === 'promote-runs-counted') marked = true;
    });
    try {
      worker = await startServer({ connection: redis.server.url, group: 'g', consumer: 'w1', blockMs: 100, recovery: false, delayed: { interval: 60_000 } }, [StartController]);
      const subscribed = async () => ((await redis.client.call('PUBSUB', 'NUMSUB', delayedWakeChannel('started'))) as [string, number])[1] === 1;
      await waitFor(async () => (await subscribed()) && promoteRuns > 0, 'the subscription and the first round');
      // A hold due at once: its wake-up brings one round, which moves it (the next regular round is a minute away).
      client = new RedisStreamsClient({ connection: redis.server.url });
      await lastValueFrom(client.emit('started', new RedisStreamsRecord('late', { deliverAt: 0 })));
      await waitFor(async () => (await redis.client.xlen('started')) === 1, 'the hold promoted by the wake-up round');
      // MONITOR shows commands in the order Redis ran them: once it shows this ECHO, every promotion before it is counted.
      await redis.client.echo('promote-runs-counted');
      await waitFor(() => marked, 'the monitor to reach the ECHO');
      // The start's round and the wake-up's: had the start run a second round, this would be 3.
      expect(promoteRuns).toBe(2);
    } finally {
      monitor.disconnect();
    }
  });
});
