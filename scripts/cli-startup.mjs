// `node scripts/cli-startup.mjs [runs]`: start-up time of the compiled CLI (build/) next to `node -e 0`,
// interleaved so machine load hits every command alike. Prints the median of each and its ratio to
// `node -e 0`. The commands talk to a private redis-server (the test harness's), never to 6379.
import { spawnSync } from 'node:child_process';
import { RedisServerProcess } from '../build/test/helpers/redis-server.js';

const runs = Number(process.argv[2] ?? 21);
const cli = 'build/src/cli/main.js';
const server = await RedisServerProcess.start();
const redis = server.client();
await redis.xgroup('CREATE', 'orders', 'billing', '0', 'MKSTREAM');
await redis.xadd('orders', '*', 'n', '1');
redis.disconnect();
const url = ['--url', server.url];
const commands = {
  'node -e 0': ['-e', '0'],
  'import ioredis': ['--input-type=module', '-e', "import 'ioredis'"],
  '--help': [cli, '--help'],
  info: [cli, 'info', 'orders', ...url],
  pending: [cli, 'pending', 'orders', 'billing', ...url],
  claim: [cli, 'claim', 'orders', 'billing', 'c', '--min-idle-time', '60000', ...url],
  ack: [cli, 'ack', 'orders', 'billing', '1-0', ...url],
  'dlq list': [cli, 'dlq', 'list', 'orders', ...url],
};
const times = Object.fromEntries(Object.keys(commands).map((name) => [name, []]));
try {
  for (let i = 0; i < runs; i++) {
    for (const [name, args] of Object.entries(commands)) {
      const start = process.hrtime.bigint();
      const run = spawnSync(process.execPath, args, { stdio: 'ignore' });
      if (run.status !== 0) throw new Error(`${name} exited with ${run.status}`);
      times[name].push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  }
} finally {
  await server.stop();
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const base = median(times['node -e 0']);
for (const [name, values] of Object.entries(times)) {
  console.log(`${name.padEnd(15)} ${median(values).toFixed(0).padStart(5)} ms  ${(median(values) / base).toFixed(2)} × node -e 0`);
}
