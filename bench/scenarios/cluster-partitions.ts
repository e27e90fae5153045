import type { Cluster, Redis } from 'ioredis';
import { partitionsMetadataKey, partitionStreamKeys } from '../../src/index.js';
import { RedisClusterProcess } from '../../test/helpers/redis-cluster.js';
import { nowNs, sleep } from '../clock.js';
import { redisCpuSeconds, type BenchContext, type Contender, type RunResult, type Scenario } from '../measure.js';
import { sendInFlight, waitAcked } from '../producers.js';
import { clusterEmitter, type StreamsEmitter } from '../streams.js';
import { WorkerProcess } from '../worker-process.js';

const MASTERS = 3;
const PARTITIONS = 3;
const IDLE_SAMPLE_MS = 2_000;

/** The scenario's own cluster: started in its setup, stopped in its teardown. */
interface LocalCluster {
  cluster: RedisClusterProcess;
  /** One plain connection per node (node1 … node3 in the JSON), for CPU and command counts. */
  nodes: Redis[];
  /** A Cluster client for checks and clean-up (pending counts, deleting the run's keys). */
  admin: Cluster;
}

let local: LocalCluster | undefined;

function running(): LocalCluster {
  if (!local) throw new Error('cluster-partitions: the cluster starts in the scenario setup');
  return local;
}

/**
 * End to end on a local Redis Cluster of 3 masters (no replicas): this process produces (256 in
 * flight) through our client while one worker process consumes, first on one stream (one master
 * holds it), then on the same pattern spread over 3 partitions, one on each master. Each run
 * keeps every node's Redis CPU and commands (`node<i>.…` in the JSON), to show how the load spreads.
 */
export const clusterPartitionsScenario: Scenario = {
  id: 'cluster-partitions',
  title: `end to end on a local ${MASTERS}-master cluster: one stream vs ${PARTITIONS} partitions`,
  reference: 'one-stream',
  optIn: true,
  setup: async (ctx) => {
    const cluster = await RedisClusterProcess.start({ masters: MASTERS, replicas: 0 });
    local = { cluster, nodes: cluster.nodes.map((node) => node.client()), admin: cluster.client() };
    ctx.log(`  cluster: ${cluster.nodes.map((node, index) => `node${index + 1} = port ${node.port}`).join(', ')}`);
    // What a node costs with no traffic (cluster bus pings, cron): the floor under the per-node figures.
    const cpu = () => Promise.all(local!.nodes.map(async (node) => redisCpuSeconds(await node.info('cpu')) * 1000));
    const before = await cpu();
    await sleep(IDLE_SAMPLE_MS);
    const idle = (await cpu()).map((ms, index) => ((ms - (before[index] as number)) / IDLE_SAMPLE_MS) * 1000);
    ctx.log(`  idle Redis CPU per node: ${idle.map((ms) => ms.toFixed(1)).join(' / ')} ms/s`);
  },
  measuredNodes: () => running().nodes,
  teardown: async () => {
    if (!local) return;
    const { cluster, nodes, admin } = local;
    local = undefined;
    admin.disconnect();
    for (const node of nodes) node.disconnect();
    await cluster.stop();
  },
  contenders: (ctx) => [
    clusterContender(ctx, 'one-stream', 'RedisStreamsClient → RedisStreamsServer, one stream (one master)', 1),
    clusterContender(ctx, `partitions-${PARTITIONS}`, `same, ${PARTITIONS} partitions (extras.partitions, round robin), one per master`, PARTITIONS),
  ],
};

function clusterContender(ctx: BenchContext, impl: string, label: string, partitions: number): Contender {
  let emitter: StreamsEmitter | undefined;
  let stream = '';
  let mastersUsed = 0;
  return {
    impl,
    label,
    setup: async () => {
      const { cluster } = running();
      ({ stream, mastersUsed } = await placeStream(`bench:cluster:${impl}`, partitions));
      const where = await Promise.all(
        partitionStreamKeys(stream, partitions).map(async (key) => `${key} on node${await nodeIndexOf(key)}`),
      );
      ctx.log(`  ${impl}: ${where.join(', ')}`);
      emitter = clusterEmitter(cluster.urls, stream, partitions);
      await emitter.open();
    },
    run: async (): Promise<RunResult> => {
      const { cluster, admin, nodes } = running();
      const total = ctx.config.endToEndMessages;
      const keys = partitionStreamKeys(stream, partitions);
      const worker = await WorkerProcess.spawn('streams-cluster-worker', {
        redisUrl: cluster.urls[0] as string,
        key: stream,
        group: 'bench',
        recordLatency: false,
        options: { nodes: cluster.urls.join(','), partitions },
      });
      try {
        await worker.go();
        const before = await worker.stats();
        const reached = worker.waitFor(total, 180_000);
        // Each node's CPU from the first send until nothing is pending (the run's figures also hold the worker's start and stop).
        const nodesCpu = () => Promise.all(nodes.map(async (node) => redisCpuSeconds(await node.info('cpu')) * 1000));
        const nodesCpuBefore = await nodesCpu();
        const producerCpu = process.cpuUsage();
        const start = nowNs();
        await sendInFlight(total, ctx.config.inFlight, () => emitter!.emit(stream));
        const producedAt = nowNs();
        const { user, system } = process.cpuUsage(producerCpu);
        const reachedAt = await reached;
        const workerCpuMs = (await worker.stats()).cpuMs - before.cpuMs;
        let ackedAt = reachedAt;
        for (const key of keys) ackedAt = Math.max(ackedAt, await waitAcked(admin, key, 'bench'));
        const nodesCpuAfter = await nodesCpu();
        const loadCpu = Object.fromEntries(nodesCpuAfter.map((ms, index) => [`node${index + 1}.loadCpuMs`, ms - (nodesCpuBefore[index] as number)]));
        return {
          msgsPerSec: total / ((reachedAt - start) / 1e9),
          extra: {
            produceMsgsPerSec: total / ((producedAt - start) / 1e9),
            ackedMsgsPerSec: total / ((ackedAt - start) / 1e9),
            workerCpuMs,
            // The bench process while it produced (it does nothing else meanwhile).
            producerCpuMs: (user + system) / 1000,
            mastersUsed,
            ...loadCpu,
          },
        };
      } finally {
        await worker.stop();
        for (const key of [...keys, ...(partitions > 1 ? [partitionsMetadataKey(stream)] : [])]) await admin.del(key);
      }
    },
    teardown: async () => {
      await emitter?.close();
    },
  };
}

/**
 * The first name `base`, `base-1`, `base-2`… whose partitions land on as many distinct masters as
 * there are partitions (up to the number of masters), so the partitioned run does use every master.
 */
async function placeStream(base: string, partitions: number): Promise<{ stream: string; mastersUsed: number }> {
  const wanted = Math.min(partitions, MASTERS);
  for (let attempt = 0; attempt < 100; attempt++) {
    const stream = attempt === 0 ? base : `${base}-${attempt}`;
    const masters = new Set(await Promise.all(partitionStreamKeys(stream, partitions).map(nodeIndexOf)));
    if (masters.size >= wanted) return { stream, mastersUsed: masters.size };
  }
  throw new Error(`no name of the form ${base}-<n> spreads ${partitions} partitions over ${wanted} masters`);
}

/** node<i> (1-based, as in the JSON) of the master that serves `key`, asked of the cluster. */
async function nodeIndexOf(key: string): Promise<number> {
  const { cluster, nodes } = running();
  const slot = Number(await (nodes[0] as Redis).cluster('KEYSLOT', key));
  return cluster.nodes.indexOf(await cluster.masterOf(slot)) + 1;
}
