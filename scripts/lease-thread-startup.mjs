// `node scripts/lease-thread-startup.mjs [runs] [A=<tree> B=<tree> ...]`: the lease thread's one-time
// start-up, per compiled tree (default `A=.`; each with build/ from `npm run compile`), in fresh
// processes interleaved round by round so machine load hits every tree alike. Each run loads ioredis
// in the main thread (as a server has), starts the tree's own LeaseThread against a private
// redis-server (the test harness's, never 6379) and prints, as medians: CPU from `start()` to the
// thread's 'ready' (watching; a tree whose thread connects at start, or a lease interval under 1 s,
// connected first) (Linux: /proc/self/task/*/schedstat) of the new thread, of the main thread and of
// the threads that existed before (V8's compiler and GC helpers), their sum (`process.cpuUsage`), the
// time to ready, and the RSS the process grew by one second after it.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

if (process.argv[2] === '--child') await child(process.argv[3], process.argv[4]);
else await parent();

async function parent() {
  const runs = Number(process.argv[2] ?? 9);
  const trees = (process.argv.length > 3 ? process.argv.slice(3) : ['A=.']).map((arg) => {
    const [label, dir] = arg.split('=');
    return { label, dir: resolve(dir), results: [] };
  });
  const { RedisServerProcess } = await import('../build/test/helpers/redis-server.js');
  const server = await RedisServerProcess.start();
  try {
    for (let round = 0; round < runs; round++) {
      for (const tree of round % 2 === 0 ? trees : [...trees].reverse()) {
        const out = execFileSync(process.execPath, [import.meta.filename, '--child', tree.dir, server.url], { encoding: 'utf8' });
        tree.results.push(JSON.parse(out));
      }
    }
  } finally {
    await server.stop();
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`${runs} fresh processes per tree, medians (ms, MB)`);
  for (const tree of trees) {
    const keys = Object.keys(tree.results[0]);
    console.log(`${tree.label}: ${keys.map((key) => `${key} ${median(tree.results.map((r) => r[key])).toFixed(1)}`).join(', ')}`);
  }
}

/** CPU time (ms) each thread of this process has had so far. */
function threadCpu() {
  const cpu = new Map();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      cpu.set(tid, Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return cpu;
}

async function child(dir, url) {
  await import('ioredis');
  const { LeaseThread } = await import(pathToFileURL(`${dir}/build/src/recovery/lease-thread-handle.js`).href);
  await new Promise((done) => setTimeout(done, 300));
  const logger = { debug() {}, log() {}, warn: (message) => console.error(message), error: (message) => console.error(message) };
  const thread = new LeaseThread(
    { connection: url, connectTimeout: 10_000, consumer: 'c', streams: [['s', 'g']], interval: 10_000, maxBlocked: 300_000 },
    logger,
    { renewed() {}, lost() {}, error() {} },
  );
  const rssBefore = process.memoryUsage().rss;
  const before = threadCpu();
  const cpuBefore = process.cpuUsage();
  const startedAt = performance.now();
  if (!thread.start()) throw new Error('the lease thread did not start');
  // The handle keeps its Worker private; a measurement may look at it.
  await new Promise((ready, fail) =>
    thread.worker.on('message', (message) => (message.type === 'ready' ? ready() : message.type === 'failed' ? fail(new Error(message.message)) : undefined)),
  );
  const readyMs = performance.now() - startedAt;
  const cpu = process.cpuUsage(cpuBefore);
  const after = threadCpu();
  const main = String(process.pid);
  let newThread = 0;
  let helpers = 0;
  for (const [tid, ms] of after) {
    if (tid === main) continue;
    if (before.has(tid)) helpers += ms - before.get(tid);
    else newThread += ms;
  }
  await new Promise((done) => setTimeout(done, 1_000));
  const rssMb = (process.memoryUsage().rss - rssBefore) / 1048576;
  await thread.stop();
  const result = { processCpu: (cpu.user + cpu.system) / 1000, thread: newThread, main: after.get(main) - before.get(main), helpers, readyMs, rssMb };
  process.stdout.write(JSON.stringify(result));
}
