// Which spec files need a Redis server, for `npm run test:matrix`: the matrix runs the suite once
// per server build, and a spec that never starts a server (codec, option validation, CLI tables,
// the import graph, ...) would only pass the same way five more times.
//
// Every server a test talks to is started by test/helpers/redis-server.ts (RedisServerProcess;
// the cluster, sentinel, worker-fleet and useRedisServer helpers all go through it). A spec needs
// a server when that file is in its import closure: its relative imports (static and dynamic),
// followed through test/, plus the test/fixtures and test/helpers files it names as strings (child
// processes run them compiled). The rule errs on the side of running a spec: a spec that merely
// imports the helper for freePort() still runs; one that starts a server cannot be left out,
// whatever helper it goes through, unless it spawns redis-server without the helper (nothing does).
//
// The browser specs (those that use test/helpers/dashboard-browser.ts, headless Chromium) start a
// server, but what they test is the page: its HTTP routes, whose answers carry what differs between
// Redis versions, are covered by the dashboard's HTTP specs on every build. The matrix leaves them
// to the PATH's run, where they cost Chromium once instead of five times.
//
// `node scripts/redis-specs.mjs` prints the lists.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SERVER_HELPER = 'test/helpers/redis-server.ts';
const BROWSER_HELPER = 'test/helpers/dashboard-browser.ts';

/** Relative imports (`from './x.js'`, `import('../x.js')`) and `'test/fixtures/…'` paths in one file. */
function referencesOf(root, file) {
  const text = readFileSync(join(root, file), 'utf8');
  const found = [];
  for (const match of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g)) {
    found.push(relative(root, resolve(root, dirname(file), match[1])));
  }
  for (const match of text.matchAll(/['"](?:\.\/)?(test\/(?:fixtures|helpers)\/[^'"]+)['"]/g)) found.push(match[1]);
  // Compiled names (`./x.js`) stand for their sources; anything outside test/ (src/) starts no server.
  return found
    .filter((path) => path.startsWith('test/'))
    .map((path) => [path, path.replace(/\.js$/, '.ts')].find((candidate) => existsSync(join(root, candidate))))
    .filter((path) => path !== undefined);
}

/** True when the import closure of `spec` reaches `helper`. */
function reaches(root, spec, helper) {
  const seen = new Set([spec]);
  const queue = [spec];
  while (queue.length > 0) {
    const file = queue.pop();
    if (file === helper) return true;
    for (const next of referencesOf(root, file)) {
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return false;
}

/**
 * `{ redis, pure, browser }`: the spec files (relative to root, sorted) that start a Redis server,
 * the rest, and of the first the ones that drive the dashboard's page in Chromium.
 */
export function classifySpecs(root) {
  // Without the helpers every spec would look server-free (or none a browser spec) and the builds would run the wrong set.
  for (const helper of [SERVER_HELPER, BROWSER_HELPER]) {
    if (!existsSync(join(root, helper))) throw new Error(`${helper} is missing: cannot tell which specs start a Redis server or a browser`);
  }
  const specs = readdirSync(join(root, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.spec.ts'))
    .map((path) => join('test', path))
    .sort();
  const redis = [];
  const pure = [];
  for (const spec of specs) (reaches(root, spec, SERVER_HELPER) ? redis : pure).push(spec);
  const browser = redis.filter((spec) => reaches(root, spec, BROWSER_HELPER));
  return { redis, pure, browser };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { redis, pure, browser } = classifySpecs(resolve(import.meta.dirname, '..'));
  console.log(`${redis.length} spec files start a Redis server:\n  ${redis.join('\n  ')}`);
  console.log(`${pure.length} spec files start none:\n  ${pure.join('\n  ')}`);
  console.log(`${browser.length} of those that start one drive the page in Chromium:\n  ${browser.join('\n  ')}`);
}
