import type { ClientProxy } from '@nestjs/microservices';
import { nowNs } from '../clock.js';
import type { BenchContext, Contender, RunResult, Scenario } from '../measure.js';
import { nestRedisClient, nestSend } from '../peers.js';
import { sendInFlight } from '../producers.js';
import { LatencyRecorder } from '../stats.js';
import { streamsEmitter, streamsPieces } from '../streams.js';
import { WorkerProcess } from '../worker-process.js';

/** Request/reply with `inFlight` requests outstanding; the server answers with the payload. */
export function requestReplyScenario(inFlight: 1 | 100): Scenario {
  return {
    id: `rpc-${inFlight}`,
    title: `request/reply, ${inFlight} in flight`,
    reference: 'nest-redis',
    contenders: (ctx) => [nestContender(ctx, inFlight), streamsContender(ctx, inFlight)],
  };
}

async function timedRequests(total: number, inFlight: number, sendOne: () => Promise<unknown>): Promise<RunResult> {
  const latencies = new LatencyRecorder();
  const start = nowNs();
  await sendInFlight(total, inFlight, async () => {
    const sentAt = nowNs();
    await sendOne();
    latencies.record(nowNs() - sentAt);
  });
  const elapsedNs = nowNs() - start;
  const summary = latencies.drain();
  return { msgsPerSec: total / (elapsedNs / 1e9), p50Ms: summary.p50Ms, p99Ms: summary.p99Ms };
}

function requests(ctx: BenchContext, inFlight: number): number {
  return inFlight === 1 ? ctx.config.requestsSerial : ctx.config.requestsParallel;
}

function nestContender(ctx: BenchContext, inFlight: number): Contender {
  let client: ClientProxy | undefined;
  let worker: WorkerProcess | undefined;
  const key = `bench:rpc:nest:${inFlight}`;
  return {
    impl: 'nest-redis',
    label: 'Nest Redis transport send',
    setup: async () => {
      worker = await WorkerProcess.spawn('nest-redis-worker', { redisUrl: ctx.server.url, key, group: 'bench', recordLatency: true });
      await worker.go();
      client = await nestRedisClient(ctx.server.url);
      // The server subscribes after listen() resolves: wait for the first answer.
      await untilAnswered(nestSend(client, `${key}.rpc`));
    },
    run: () => withRequestLeg(worker!, () => timedRequests(requests(ctx, inFlight), inFlight, nestSend(client!, `${key}.rpc`))),
    teardown: async () => {
      await client?.close();
      await worker?.stop();
    },
  };
}

function streamsContender(ctx: BenchContext, inFlight: number): Contender {
  const emitter = streamsEmitter(ctx.server.url);
  const unavailable = emitter.unavailable ?? (streamsPieces.server ? undefined : 'RedisStreamsServer has not landed yet');
  let worker: WorkerProcess | undefined;
  const key = `bench:rpc:streams:${inFlight}`;
  return {
    impl: 'streams',
    label: 'RedisStreamsClient.send',
    ...(unavailable ? { unavailable } : {}),
    setup: async () => {
      worker = await WorkerProcess.spawn('streams-worker', { redisUrl: ctx.server.url, key, group: 'bench', recordLatency: true });
      await worker.go();
      await emitter.open();
      await untilAnswered(() => emitter.send(`${key}.rpc`));
    },
    run: () => withRequestLeg(worker!, () => timedRequests(requests(ctx, inFlight), inFlight, () => emitter.send(`${key}.rpc`))),
    teardown: async () => {
      await emitter.close();
      await worker?.stop();
    },
  };
}

/**
 * Adds the request leg (send → handler, from the payload's stamp) and the CPU of the worker and
 * of the requesting process to the extras: which side a difference comes from. The worker's
 * recorder is drained by each stats call.
 */
async function withRequestLeg(worker: WorkerProcess, run: () => Promise<RunResult>): Promise<RunResult> {
  const before = await worker.stats();
  const clientCpu = process.cpuUsage();
  const result = await run();
  const { user, system } = process.cpuUsage(clientCpu);
  const after = await worker.stats();
  return {
    ...result,
    extra: {
      ...result.extra,
      requestLegP50Ms: after.latency.p50Ms,
      requestLegP99Ms: after.latency.p99Ms,
      // CPU of each side for the run (the requester is this process).
      workerCpuMs: after.cpuMs - before.cpuMs,
      clientCpuMs: (user + system) / 1000,
    },
  };
}

async function untilAnswered(sendOne: () => Promise<unknown>): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      await Promise.race([sendOne(), new Promise((_, reject) => setTimeout(() => reject(new Error('no answer')), 500))]);
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
  }
}
