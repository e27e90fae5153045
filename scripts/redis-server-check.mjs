// Before `npm test`, `npm run sample` and `npm run bench` start private redis-server processes:
// say in one line what is missing and how to get it, instead of a `spawn redis-server ENOENT` trace.
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The redis-server the harness will run (REDIS_SERVER_BIN, else the PATH), or undefined. */
export function findRedisServer(env = process.env) {
  const executable = (path) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (env.REDIS_SERVER_BIN) return executable(env.REDIS_SERVER_BIN) ? env.REDIS_SERVER_BIN : undefined;
  return (env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'redis-server')).find(executable);
}

/** Exits with 1 and one line on stderr when no redis-server can be started. */
export function requireRedisServer({ orRedisUrl = false } = {}) {
  if (orRedisUrl && process.env.REDIS_URL) return;
  if (findRedisServer()) return;
  const what = process.env.REDIS_SERVER_BIN
    ? `REDIS_SERVER_BIN=${process.env.REDIS_SERVER_BIN} is not an executable file`
    : 'redis-server is not on the PATH';
  const ways = ['install it (Debian/Ubuntu: sudo apt-get install -y redis-server)', 'set REDIS_SERVER_BIN to a redis-server binary'];
  if (orRedisUrl) ways.push('set REDIS_URL to an existing server');
  console.error(`error: ${what}: ${ways.slice(0, -1).join(', ')}, or ${ways.at(-1)}`);
  process.exit(1);
}
