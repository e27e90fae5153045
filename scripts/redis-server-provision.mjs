// Before `npm test`, `npm run sample`, `npm run bench` and `npm run test:packed` start private
// redis-server processes: find one; else install Debian's package where this machine allows it
// without a prompt; else say in one line what to run (never a `spawn redis-server ENOENT` trace).
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name, env) {
  return (env.PATH ?? '').split(delimiter).map((dir) => join(dir, name)).find(executable);
}

/** The redis-server the harness will run (REDIS_SERVER_BIN, else the PATH), or undefined. */
export function findRedisServer(env = process.env) {
  if (env.REDIS_SERVER_BIN) return executable(env.REDIS_SERVER_BIN) ? env.REDIS_SERVER_BIN : undefined;
  return onPath('redis-server', env);
}

/**
 * The prefix that runs apt-get with the right to install: none as root, `sudo -n` where sudo
 * needs no password. Undefined without apt-get (not Debian or Ubuntu) or without that right.
 */
function aptPrefix(env) {
  if (process.platform !== 'linux' || !onPath('apt-get', env)) return undefined;
  if (process.getuid?.() === 0) return [];
  if (onPath('sudo', env) && spawnSync('sudo', ['-n', 'true'], { env, stdio: 'ignore' }).status === 0) return ['sudo', '-n'];
  return undefined;
}

/** What a person runs to get redis-server on this kind of machine. */
function installAdvice(env) {
  if (process.platform === 'darwin') return 'run `brew install redis`';
  if (onPath('apt-get', env)) return 'run `sudo apt-get install -y redis-server`';
  return 'install redis-server with the system\'s package manager (Debian/Ubuntu: `sudo apt-get install -y redis-server`)';
}

function fail(message) {
  console.error(`error: ${message}`);
  process.exit(1);
}

/**
 * Makes sure a redis-server can be started, or exits with 1 and one line on stderr. With
 * `orRedisUrl`, REDIS_URL (an existing server) is enough. A REDIS_SERVER_BIN that is not an
 * executable is an error of its own, never papered over by an install.
 */
export function ensureRedisServer({ orRedisUrl = false, env = process.env } = {}) {
  if (orRedisUrl && env.REDIS_URL) return;
  if (findRedisServer(env)) return;
  const otherWays = `set REDIS_SERVER_BIN to a redis-server binary${orRedisUrl ? ', or set REDIS_URL to an existing server' : ''}`;
  if (env.REDIS_SERVER_BIN) fail(`REDIS_SERVER_BIN=${env.REDIS_SERVER_BIN} is not an executable file: ${installAdvice(env)}, or ${otherWays}`);

  const prefix = aptPrefix(env);
  if (prefix === undefined) fail(`redis-server is not on the PATH and cannot be installed from here: ${installAdvice(env)}, or ${otherWays}`);

  const apt = (...args) => {
    const argv = [...prefix, 'apt-get', ...args];
    return spawnSync(argv[0], argv.slice(1), { env: { ...env, DEBIAN_FRONTEND: 'noninteractive' }, encoding: 'utf8' });
  };
  console.error(`redis-server is not on the PATH: installing Debian's redis-server package (${[...prefix, 'apt-get', 'install', '-y', 'redis-server'].join(' ')})`);
  // A fresh machine may have no package lists yet: without the update the package is not found.
  const update = apt('update', '-qq');
  const install = update.status === 0 ? apt('install', '-y', '-qq', 'redis-server') : update;
  if (install.status !== 0 || !findRedisServer(env)) {
    process.stderr.write(`${install.stdout ?? ''}${install.stderr ?? ''}${install.error ? `${install.error.message}\n` : ''}`);
    fail(`installing redis-server failed (above): ${installAdvice(env)}, or ${otherWays}`);
  }
}
