// The README's test command: type-check and compile everything (child-process fixtures run the
// compiled output), run vitest, and close with the "N passed, N failed" line CI understands.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { ensureRedisServer } from './redis-server-provision.mjs';

ensureRedisServer();

const run = (cmd, args) => spawnSync(cmd, args, { stdio: 'inherit', shell: false }).status ?? 1;

if (run('npx', ['tsc', '-p', 'tsconfig.json']) !== 0 || run('node', ['scripts/copy-assets.mjs', 'build/src']) !== 0) {
  console.error('type-check failed');
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const report = 'build/vitest-report.json';
rmSync(report, { force: true });
const status = run('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile=${report}`, ...process.argv.slice(2)]);
if (existsSync(report)) {
  const { numPassedTests = 0, numFailedTests = 0, numPendingTests = 0 } = JSON.parse(readFileSync(report, 'utf8'));
  console.log(`${numPassedTests} passed, ${numFailedTests} failed, ${numPendingTests} skipped`);
}
process.exit(status);
