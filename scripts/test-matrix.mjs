// `npm run test:matrix`: the whole suite against every Redis users run. Compiles once, then runs
// vitest once per server (REDIS_SERVER_BIN picks it): Debian's `redis-server` on the PATH and every
// `../shared/redis-builds/*/bin/redis-server` (REDIS_BUILDS_DIR overrides that folder;
// MATRIX_SKIP_PATH_SERVER=1 leaves out the PATH's server, which `.ci/run` tested just before). Prints
// one line per server and closes with "N passed, N failed" over all of them; exits 1 if any failed.
// The builds run only the spec files that start a Redis server (scripts/redis-specs.mjs says which):
// the others pass the same way against any server, and the PATH's run (or `npm test`) ran them.
// Nor do the builds run the dashboard's browser specs (headless Chromium): they test the page, whose
// HTTP routes the HTTP specs test on every build, and Chromium is the slowest part of the suite.
// MATRIX_ALL_SPECS=1 runs every spec against every server. Extra arguments go to vitest (e.g. a spec file).
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { classifySpecs } from './redis-specs.mjs';

const root = resolve(import.meta.dirname, '..');
const buildsDir = resolve(root, process.env.REDIS_BUILDS_DIR ?? '../shared/redis-builds');
const run = (cmd, args, env = {}) =>
  spawnSync(cmd, args, { cwd: root, stdio: 'inherit', shell: false, env: { ...process.env, ...env } }).status ?? 1;

if (run('npx', ['tsc', '-p', 'tsconfig.json']) !== 0 || run('node', ['scripts/copy-assets.mjs', 'build/src']) !== 0) {
  console.error('type-check failed');
  console.log('0 passed, 1 failed');
  process.exit(1);
}

/** `{ name, bin }` of every server to test, the PATH's redis-server first. */
function servers() {
  // CI has just run `npm test` against the PATH's server: MATRIX_SKIP_PATH_SERVER=1 does not run it twice.
  const skipPath = process.env.MATRIX_SKIP_PATH_SERVER === '1';
  if (skipPath) console.log('note: MATRIX_SKIP_PATH_SERVER=1: the redis-server on the PATH is not tested again (npm test did)');
  const list = skipPath ? [] : [{ name: PATH_SERVER, bin: 'redis-server' }];
  if (!existsSync(buildsDir)) {
    console.log(`note: ${buildsDir} is absent; testing only the redis-server on the PATH`);
    return list.length > 0 ? list : [{ name: PATH_SERVER, bin: 'redis-server' }];
  }
  for (const folder of readdirSync(buildsDir).sort()) {
    const bin = serverBinaryIn(join(buildsDir, folder, 'bin'));
    if (bin !== undefined) list.push({ name: folder, bin });
    else if (existsSync(join(buildsDir, folder, 'bin'))) {
      // A build whose binary cannot run must not pass unnoticed as "no tests".
      console.log(`note: ${folder}/bin has no executable redis-server or valkey-server; counted as failed`);
      list.push({ name: folder, bin: undefined });
    }
  }
  return list;
}

/**
 * The server binary of one build folder. Valkey's builds name it `valkey-server`; their
 * `redis-server` may be a symlink that a copy turned into a text file naming its target, so the
 * executable is what counts, not the name.
 */
function serverBinaryIn(binDir) {
  for (const name of ['redis-server', 'valkey-server']) {
    const path = join(binDir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // next name
    }
  }
  return undefined;
}

/** "Redis 7.0.15" / "Valkey 8.0.1" from `--version`: a label for the summary, never a capability. */
function versionOf(bin) {
  const result = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  const match = /^(\w+) server v=(\S+)/.exec(result.stdout ?? '');
  return match ? `${match[1]} ${match[2]}` : 'version unknown';
}

const PATH_SERVER = 'redis-server (PATH)';
const allSpecs = process.env.MATRIX_ALL_SPECS === '1';
const filters = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
const { redis: redisSpecs, pure: pureSpecs, browser: browserSpecs } = classifySpecs(root);
/** What the builds leave to the PATH's run: specs that start no server, and the page's specs in Chromium. */
const onceSpecs = [...pureSpecs, ...browserSpecs];
if (!allSpecs) {
  console.log(
    `note: the builds run the ${redisSpecs.length - browserSpecs.length} spec files that start a Redis server and no browser; ` +
      `the ${pureSpecs.length} that start none and the ${browserSpecs.length} in Chromium (the page; its routes are tested on every build) ` +
      `run once, against the PATH's server (MATRIX_ALL_SPECS=1: against every server): ${onceSpecs.join(' ')}`,
  );
}

const summaries = [];
const failures = [];
let passed = 0;
let failed = 0;
let anyFailed = false;
for (const { name, bin } of servers()) {
  if (bin === undefined) {
    failed += 1;
    anyFailed = true;
    failures.push(`${name}: no executable server binary`);
    summaries.push(`${name.padEnd(20)} ${'not runnable'.padEnd(15)} 0 passed, 1 failed, 0 skipped`);
    continue;
  }
  const version = versionOf(bin);
  // --exclude adds to the config's exclude; a spec an extra argument names is not left out.
  const excluded = allSpecs || name === PATH_SERVER ? [] : onceSpecs.filter((spec) => !filters.some((filter) => spec.includes(filter)));
  const scope = excluded.length > 0 ? ` (without the ${excluded.length} spec files that start no server or a browser)` : '';
  console.log(`\n=== ${name}: ${version}${scope} ===`);
  const report = join(root, 'build', `vitest-report-${name.replace(/[^\w.-]+/g, '_')}.json`);
  rmSync(report, { force: true });
  const status = run(
    'npx',
    ['vitest', 'run', '--reporter=dot', '--reporter=json', `--outputFile=${report}`, ...excluded.flatMap((spec) => ['--exclude', spec]), ...process.argv.slice(2)],
    { REDIS_SERVER_BIN: bin },
  );
  let counts = { numPassedTests: 0, numFailedTests: 0, numPendingTests: 0, testResults: [] };
  if (existsSync(report)) counts = { ...counts, ...JSON.parse(readFileSync(report, 'utf8')) };
  // The dot reporter's failure details scroll away in a long CI log: name each failure again.
  for (const file of counts.testResults) {
    for (const test of file.assertionResults ?? []) {
      if (test.status === 'failed') failures.push(`${name}: ${file.name.replace(`${root}/`, '')} > ${test.fullName}`);
    }
  }
  // vitest failed without a failing test (crash, no report, unhandled error): count one failure.
  const serverFailed = counts.numFailedTests + (status !== 0 && counts.numFailedTests === 0 ? 1 : 0);
  passed += counts.numPassedTests;
  failed += serverFailed;
  if (status !== 0 || serverFailed > 0) anyFailed = true;
  summaries.push(
    `${name.padEnd(20)} ${version.padEnd(15)} ${counts.numPassedTests} passed, ${serverFailed} failed, ${counts.numPendingTests} skipped`,
  );
}

console.log('\nmatrix:');
for (const line of summaries) console.log(`  ${line}`);
if (failures.length > 0) {
  console.log('failed tests:');
  for (const line of failures) console.log(`  ${line}`);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(anyFailed ? 1 : 0);
