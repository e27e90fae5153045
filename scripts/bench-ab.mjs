// A/B of the consume scenario's worker CPU per entry between built trees (each a checkout with
// `npx tsc -p tsconfig.json && node scripts/copy-assets.mjs build/src` done):
//   ROUNDS=7 node scripts/bench-ab.mjs A=/tmp/base B=/path/to/this/checkout
// Every round runs every contender once (order reversed every other round) against one private
// redis-server, so A and B share the same time window on a shared host; NO_RAW=1 / NO_BATCH=1
// leave out the raw contenders / the batch workers. Prints medians; the per-round log goes to stderr.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
const args = process.argv.slice(2);
const rounds = Number(process.env.ROUNDS ?? 5);
const total = Number(process.env.TOTAL ?? 100000);
const builds = args.map((a) => { const [label, dir] = a.split('='); return { label, dir }; });
const port = await new Promise((res) => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
const redisProc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
const admin = new Redis({ port, host: '127.0.0.1', retryStrategy: (times) => (times > 100 ? null : 50) });
await admin.ping(); // ioredis retries the connection until the server listens (at most ~5 s)
const mods = {};
for (const b of builds) {
  mods[b.label] = {
    wp: await import(`${b.dir}/build/bench/worker-process.js`),
    prod: await import(`${b.dir}/build/bench/producers.js`),
  };
}
const contenders = [];
if (!process.env.NO_RAW) {
  contenders.push({ name: 'raw', build: builds[0].label, script: 'raw-worker' });
  contenders.push({ name: 'raw-nest-handler', build: builds[0].label, script: 'nest-raw-loop-worker' });
}
for (const b of builds) {
  contenders.push({ name: `streams[${b.label}]`, build: b.label, script: 'streams-worker' });
  if (!process.env.NO_BATCH) contenders.push({ name: `streams-batch[${b.label}]`, build: b.label, script: 'streams-batch-worker' });
}
const results = new Map(contenders.map((c) => [c.name, []]));
for (let round = -1; round < rounds; round++) {
  // Alternate order each round so no build always runs first.
  const order = round % 2 === 0 ? contenders : [...contenders].reverse();
  for (const c of order) {
    const { wp, prod } = mods[c.build];
    const key = `ab:${c.name}:${round}`;
    await prod.fillStream(admin, key, total);
    const worker = await wp.WorkerProcess.spawn(c.script, { redisUrl: `redis://127.0.0.1:${port}`, key, group: 'bench', recordLatency: false });
    try {
      const before = await worker.stats();
      const reached = worker.waitFor(total, 120000);
      const startedAt = await worker.go();
      const reachedAt = await reached;
      await prod.waitAcked(admin, key, 'bench');
      const after = await worker.stats();
      const r = { rate: total / ((reachedAt - startedAt) / 1e9), cpuUs: ((after.cpuMs - before.cpuMs) * 1000) / total, rssMb: after.rssKb / 1024 };
      if (round >= 0) results.get(c.name).push(r);
      console.error(`${round < 0 ? 'warm-up' : `round ${round + 1}`} ${c.name}: ${Math.round(r.rate)} msg/s, ${r.cpuUs.toFixed(2)} µs CPU/entry`);
    } finally {
      await worker.stop();
      await admin.del(key);
    }
  }
}
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
console.log(`\n${rounds} rounds of ${total} entries, medians; load ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}`);
console.log('| contender | msg/s | worker CPU µs/entry | CPU range |');
console.log('|---|---:|---:|---|');
for (const [name, rs] of results) {
  const cpu = rs.map((r) => r.cpuUs);
  console.log(`| ${name} | ${Math.round(median(rs.map((r) => r.rate)))} | ${median(cpu).toFixed(2)} | ${Math.min(...cpu).toFixed(1)}–${Math.max(...cpu).toFixed(1)} |`);
}
admin.disconnect();
redisProc.kill();
