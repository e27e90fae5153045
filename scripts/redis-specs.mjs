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
// `node scripts/redis-specs.mjs` prints both lists.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SERVER_HELPER = 'test/helpers/redis-server.ts';

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

/** True when the import closure of `spec` reaches test/helpers/redis-server.ts. */
function startsAServer(root, spec) {
  const seen = new Set([spec]);
  const queue = [spec];
  while (queue.length > 0) {
    const file = queue.pop();
    if (file === SERVER_HELPER) return true;
    for (const next of referencesOf(root, file)) {
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return false;
}

/** `{ redis, pure }`: the spec files (relative to root, sorted) that start a Redis server, and the rest. */
export function classifySpecs(root) {
  // Without the helper every spec would look server-free and the builds would run nothing.
  if (!existsSync(join(root, SERVER_HELPER))) throw new Error(`${SERVER_HELPER} is missing: cannot tell which specs start a Redis server`);
  const specs = readdirSync(join(root, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.spec.ts'))
    .map((path) => join('test', path))
    .sort();
  const redis = [];
  const pure = [];
  for (const spec of specs) (startsAServer(root, spec) ? redis : pure).push(spec);
  return { redis, pure };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { redis, pure } = classifySpecs(resolve(import.meta.dirname, '..'));
  console.log(`${redis.length} spec files start a Redis server:\n  ${redis.join('\n  ')}`);
  console.log(`${pure.length} spec files start none:\n  ${pure.join('\n  ')}`);
}
