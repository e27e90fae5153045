// `npm run bench [-- --quick] [-- --only emit,e2e] [-- --profile]`: compile (tsc → build/), then run
// the compiled bench (build/bench/main.js). --profile runs every process with --cpu-prof and prints
// the hottest functions of our own code (src/) afterwards.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ensureRedisServer } from './redis-server-provision.mjs';

ensureRedisServer();

const args = process.argv.slice(2);
const run = (cmd, argv, env = process.env) => spawnSync(cmd, argv, { stdio: 'inherit', env }).status ?? 1;

if (!args.includes('--no-compile')) {
  const status = run('npx', ['tsc', '-p', 'tsconfig.json']);
  if (status !== 0) {
    // tsc still emits; a type error elsewhere in the tree need not stop a bench run during development.
    if (process.env.BENCH_ALLOW_TYPE_ERRORS !== '1') {
      console.error('type-check failed (set BENCH_ALLOW_TYPE_ERRORS=1 to run anyway)');
      process.exit(status);
    }
    console.error('type-check failed; running anyway (BENCH_ALLOW_TYPE_ERRORS=1)');
  }
  // The Lua scripts next to their loaders: without them a worker's close (handoff) and recovery fail with ENOENT.
  if (run(process.execPath, ['scripts/copy-assets.mjs', 'build/src']) !== 0) process.exit(1);
}
if (!existsSync('build/bench/main.js')) {
  console.error('build/bench/main.js missing: did tsc emit?');
  process.exit(1);
}

const env = { ...process.env };
const nodeArgs = [];
let profiles;
if (args.includes('--profile')) {
  profiles = join('.bench-results', 'profiles', new Date().toISOString().replace(/[:.]/g, '-'));
  mkdirSync(profiles, { recursive: true });
  env.BENCH_CPU_PROF_DIR = profiles;
  nodeArgs.push('--cpu-prof', '--cpu-prof-dir', profiles, '--cpu-prof-name', `main-${Date.now()}.cpuprofile`);
}
const benchArgs = args.filter((a) => a !== '--no-compile' && a !== '--profile');
const status = run(process.execPath, [...nodeArgs, 'build/bench/main.js', ...benchArgs], env);
if (profiles) run(process.execPath, ['build/bench/profile-summary.js', profiles]);
process.exit(status);
