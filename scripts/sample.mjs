// `npm run sample`: compile the project (sample included) and run the sample application.
import { spawnSync } from 'node:child_process';
import { ensureRedisServer } from './redis-server-provision.mjs';

ensureRedisServer({ orRedisUrl: true });

const run = (cmd, args) => spawnSync(cmd, args, { stdio: 'inherit' }).status ?? 1;
if (run('npx', ['tsc', '-p', 'tsconfig.sample.json']) !== 0) process.exit(1);
if (run('node', ['scripts/copy-assets.mjs', 'build/src']) !== 0) process.exit(1);
process.exit(run(process.execPath, ['build/sample/main.js']));
