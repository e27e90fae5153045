// A/B of the consume scenario's workers, round by round: worker CPU per entry and msg/s between
// built trees (each a checkout with `npx tsc -p tsconfig.json && node scripts/copy-assets.mjs
// build/src` done) or between server options:
//   ROUNDS=7 node scripts/bench-ab.mjs A=/tmp/base B=/path/to/this/checkout
//   CONTENDERS='[{"name":"p200","script":"streams-worker","options":{"prefetch":200}},
//                {"name":"p400","script":"streams-worker","options":{"prefetch":400}}]' \
//     ROUNDS=7 node scripts/bench-ab.mjs A=.
// Every round runs every contender once (order reversed every other round) against one private
// redis-server, so all share the same time window on a host whose speed drifts. Without
// CONTENDERS: the raw loop and the Nest handler on it (NO_RAW=1 leaves them out), then per build
// the per-entry and the batch worker (NO_BATCH=1 leaves the batch one out); CONTENDERS entries run
// on the first build unless they name one (`"build":"B"`). TOTAL sets the entries per run
// (default 100000). Prints medians and, against the first contender, the median of the
// per-round ratios; the per-round log goes to stderr.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
const rounds = Number(process.env.ROUNDS ?? 5);
const total = Number(process.env.TOTAL ?? 100000);
const builds = process.argv.slice(2).map((arg) => {
  const [label, dir] = arg.split('=');
  return { label, dir: new URL(dir, `file://${process.cwd()}/`).pathname.replace(/\/$/, '') };
});
if (builds.length === 0) throw new Error('usage: node scripts/bench-ab.mjs A=<built tree> [B=<built tree> ...]');
const port = await new Promise((res) => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
const redisProc = spawn(process.env.REDIS_SERVER_BIN ?? 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
const admin = new Redis({ port, host: '127.0.0.1', retryStrategy: (times) => (times > 100 ? null : 50) });
admin.on('error', () => undefined); // refused until the server listens: ioredis retries (at most ~5 s)
await admin.ping();
const mods = {};
for (const b of builds) {
  mods[b.label] = {
    wp: await import(`${b.dir}/build/bench/worker-process.js`),
    prod: await import(`${b.dir}/build/bench/producers.js`),
  };
}
let contenders = [];
if (process.env.CONTENDERS) {
  contenders = JSON.parse(process.env.CONTENDERS).map((c) => ({ build: builds[0].label, ...c }));
} else {
  if (!process.env.NO_RAW) {
    contenders.push({ name: 'raw', build: builds[0].label, script: 'raw-worker' });
    contenders.push({ name: 'raw-nest-handler', build: builds[0].label, script: 'nest-raw-loop-worker' });
  }
  for (const b of builds) {
    contenders.push({ name: `streams[${b.label}]`, build: b.label, script: 'streams-worker' });
    if (!process.env.NO_BATCH) contenders.push({ name: `streams-batch[${b.label}]`, build: b.label, script: 'streams-batch-worker' });
  }
}
const results = new Map(contenders.map((c) => [c.name, []]));
for (let round = -1; round < rounds; round++) {
  // Alternate order each round so no contender always runs first.
  const order = round % 2 === 0 ? contenders : [...contenders].reverse();
  for (const c of order) {
    const { wp, prod } = mods[c.build];
    const key = `ab:${c.name}:${round}`;
    await prod.fillStream(admin, key, total);
    const worker = await wp.WorkerProcess.spawn(c.script, { redisUrl: `redis://127.0.0.1:${port}`, key, group: 'bench', recordLatency: false, ...(c.options ? { options: c.options } : {}) });
    try {
      const before = await worker.stats();
      const reached = worker.waitFor(total, 120000);
      const startedAt = await worker.go();
      const reachedAt = await reached;
      await prod.waitAcked(admin, key, 'bench');
      const after = await worker.stats();
      const perEntry = (ms) => (ms * 1000) / total;
      const r = {
        rate: total / ((reachedAt - startedAt) / 1e9),
        cpuUs: perEntry(after.cpuMs - before.cpuMs),
        userUs: perEntry(after.cpuUserMs - before.cpuUserMs),
        systemUs: perEntry(after.cpuSystemMs - before.cpuSystemMs),
        // From the handler's half-way entry to its last: start-up left out (NaN for a build whose harness lacks it).
        steadyUs: ((after.lastCpuMs - after.halfCpuMs) * 1000) / (total - Math.floor(total / 2)),
        // From the start call to the first entry: listen() and the first read.
        startMs: after.firstCpuMs - before.cpuMs,
      };
      if (round >= 0) results.get(c.name)[round] = r;
      console.error(`${round < 0 ? 'warm-up' : `round ${round + 1}`} ${c.name}: ${Math.round(r.rate)} msg/s, ${r.cpuUs.toFixed(2)} µs CPU/entry (user ${r.userUs.toFixed(2)}, system ${r.systemUs.toFixed(2)}; second half ${r.steadyUs.toFixed(2)}; start ${r.startMs.toFixed(0)} ms)`);
    } finally {
      await worker.stop();
      await admin.del(key);
    }
  }
}
const { median } = await import(`${builds[0].dir}/build/bench/stats.js`);
const [first] = contenders;
console.log(`\n${rounds} rounds of ${total} entries, medians; load ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
console.log(`| contender | msg/s | per-round ratio to ${first.name} | worker CPU µs/entry | user | system | CPU range | 2nd half CPU µs/entry | its per-round ratio |`);
console.log('|---|---:|---:|---:|---:|---:|---|---:|---:|');
for (const [name, rs] of results) {
  const cpu = rs.map((r) => r.cpuUs);
  const paired = median(rs.map((r, i) => r.rate / results.get(first.name)[i].rate));
  console.log(`| ${name} | ${Math.round(median(rs.map((r) => r.rate)))} | ${paired.toFixed(3)}× | ${median(cpu).toFixed(2)} | ${median(rs.map((r) => r.userUs)).toFixed(2)} | ${median(rs.map((r) => r.systemUs)).toFixed(2)} | ${Math.min(...cpu).toFixed(1)}–${Math.max(...cpu).toFixed(1)} | ${median(rs.map((r) => r.steadyUs)).toFixed(2)} | ${median(rs.map((r, i) => r.steadyUs / results.get(first.name)[i].steadyUs)).toFixed(3)}× |`);
}
admin.disconnect();
redisProc.kill();
