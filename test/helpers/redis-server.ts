import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import type { ConnectionOptions } from 'node:tls';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export interface RedisServerOptions {
  /** Turn AOF persistence on (appendfsync always), so a restart keeps the data. */
  appendOnly?: boolean;
  /** Extra `redis-server` arguments, e.g. `['--maxmemory', '10mb']`. */
  args?: string[];
  /** `requirepass`: clients must authenticate with this password (the start-up probe does). */
  password?: string;
  /** Serve TLS only (`--port 0`, `--tls-port`): see `supportsTls()` first. */
  tls?: RedisServerTls;
  /**
   * This redis-server binary instead of `REDIS_SERVER_BIN` / the PATH: for a test that needs one
   * server version whatever the matrix runs (see `redisBuild()`), or a failover to another one.
   */
  binary?: string;
}

export interface RedisServerTls {
  certFile: string;
  keyFile: string;
  /** CA that client certificates must chain to (redis-server wants one even without `authClients`). */
  caFile: string;
  /** `--tls-auth-clients yes`: clients must present a certificate (mutual TLS). Default false. */
  authClients?: boolean;
  /** What the start-up probe and `client()` present (a client certificate for mutual TLS). */
  client?: ConnectionOptions;
}

const running = new Set<RedisServerProcess>();
process.once('exit', () => {
  for (const server of running) server.killNow();
});

/** A free TCP port on 127.0.0.1 (the OS picks it; we release it for redis-server at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * A private redis-server on a free loopback port, with its own data directory. Tests never touch
 * a server they did not start. It can be killed, paused (SIGSTOP) and restarted on the same port.
 */
export class RedisServerProcess {
  private child?: ChildProcess;
  private readonly dir = mkdtempSync(join(tmpdir(), 'nrs-redis-'));

  private constructor(
    readonly port: number,
    private options: RedisServerOptions,
  ) {}

  static async start(options: RedisServerOptions = {}): Promise<RedisServerProcess> {
    for (let attempt = 0; ; attempt++) {
      const server = new RedisServerProcess(await freePort(), options);
      try {
        await server.launch();
        return server;
      } catch (error) {
        // Another process may grab the port between probe and bind; try a new one.
        if (attempt >= 4) throw error;
      }
    }
  }

  get url(): string {
    return `${this.options.tls ? 'rediss' : 'redis'}://127.0.0.1:${this.port}`;
  }

  /** ioredis `tls` option of the probe and `client()`: what `tls.client` presents, the server's certificate not checked. */
  private get probeTls(): ConnectionOptions | undefined {
    const { tls } = this.options;
    return tls && { ...tls.client, rejectUnauthorized: false };
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** True while the process runs (killed or stopped: false). */
  get alive(): boolean {
    const child = this.child;
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  /** A new ioredis client for this server; the caller closes it. */
  client(options: { lazyConnect?: boolean } = {}): Redis {
    return new Redis({ host: '127.0.0.1', port: this.port, password: this.options.password, tls: this.probeTls, maxRetriesPerRequest: 3, ...options });
  }

  /** SIGKILL: the process dies at once; without AOF its data is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
    running.delete(this);
  }

  /** SIGSTOP: the server keeps its sockets but answers nothing until `resume()`. */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  /**
   * Kill (if alive) and start again on the same port and data directory; with `options`, started
   * with those instead (e.g. other `args`: a failover to a differently configured server).
   */
  async restart(options: RedisServerOptions = this.options): Promise<void> {
    await this.kill();
    this.options = options;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.launch();
        return;
      } catch (error) {
        // The port can linger for a moment after SIGKILL.
        if (attempt >= 20) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }

  /** Stop for good and remove the data directory. */
  async stop(): Promise<void> {
    this.resume();
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  killNow(): void {
    try {
      this.child?.kill('SIGCONT');
      this.child?.kill('SIGKILL');
    } catch {
      // already gone
    }
  }

  private launch(): Promise<void> {
    const { tls } = this.options;
    const args = [
      ...(tls === undefined
        ? ['--port', String(this.port)]
        : [
            '--port', '0',
            '--tls-port', String(this.port),
            '--tls-cert-file', tls.certFile,
            '--tls-key-file', tls.keyFile,
            '--tls-ca-cert-file', tls.caFile,
            '--tls-auth-clients', tls.authClients ? 'yes' : 'no',
          ]),
      '--bind', '127.0.0.1',
      '--protected-mode', 'no',
      '--daemonize', 'no',
      '--dir', this.dir,
      '--save', '',
      '--appendonly', this.options.appendOnly ? 'yes' : 'no',
      ...(this.options.appendOnly ? ['--appendfsync', 'always'] : []),
      '--loglevel', 'warning',
      // A replica's full sync starts at once: diskless sync (the default from 7.0) waits 5 s for more replicas first.
      '--repl-diskless-sync-delay', '0',
      ...(this.options.password === undefined ? [] : ['--requirepass', this.options.password]),
      ...(this.options.args ?? []),
    ];
    const binary = this.options.binary ?? redisServerBinary();
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'], env: redisServerEnv() });
    this.child = child;
    running.add(this);
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    return new Promise<void>((resolve, reject) => {
      const deadline = Date.now() + 10_000;
      const fail = (why: string) => {
        child.kill('SIGKILL');
        running.delete(this);
        reject(new Error(`redis-server on port ${this.port} ${why}: ${output.trim()}`));
      };
      child.once('exit', (code) => fail(`exited with ${code}`));
      // ENOENT and EACCES arrive as an 'error' event: without a listener they crash the process.
      child.once('error', (error) => {
        child.removeAllListeners('exit');
        running.delete(this);
        reject(new Error(`${binary} cannot be started (${(error as NodeJS.ErrnoException).code ?? error.message}): ${HOW_TO_GET_REDIS_SERVER}`));
      });
      const poll = async () => {
        const probe = new Redis({
          host: '127.0.0.1',
          port: this.port,
          password: this.options.password,
          tls: this.probeTls,
          lazyConnect: true,
          retryStrategy: () => null,
          maxRetriesPerRequest: 0,
        });
        probe.on('error', () => undefined);
        try {
          await probe.connect();
          await probe.ping();
          child.removeAllListeners('exit');
          resolve();
        } catch {
          if (Date.now() > deadline) fail('did not answer within 10 s');
          else setTimeout(() => void poll(), 50);
        } finally {
          probe.disconnect();
        }
      };
      setTimeout(() => void poll(), 30);
    });
  }
}

/**
 * The environment a redis-server (or sentinel) child runs in: ours, with the C locale. Redis 7 and
 * later refuse to start when LC_ALL / LANG name a locale the host has not generated (a container
 * with `LANG=en_US.UTF-8` and no locales package), and nothing here depends on its collation.
 */
export function redisServerEnv(): NodeJS.ProcessEnv {
  return { ...process.env, LC_ALL: 'C' };
}

const HOW_TO_GET_REDIS_SERVER =
  'install redis-server (Debian/Ubuntu: sudo apt-get install -y redis-server) or set REDIS_SERVER_BIN to a redis-server binary';

/**
 * Whether the redis-server binary was built with TLS (Debian's is; the plain builds under
 * /work/shared are not). Asked with certificate files that do not exist: a TLS build fails
 * configuring TLS, another rejects `tls-port` or finds no TLS connection type.
 */
export function supportsTls(): boolean {
  const run = spawnSync(
    redisServerBinary(),
    ['--port', '0', '--tls-port', '1', '--tls-cert-file', '/nonexistent', '--tls-key-file', '/nonexistent', '--save', ''],
    { encoding: 'utf8', timeout: 10_000, env: redisServerEnv() },
  );
  return /Failed to configure TLS/.test(`${run.stdout}${run.stderr}`);
}

/**
 * The redis-server binary of one of the builds in /work/shared/redis-builds (`redis-8.6.3`,
 * `valkey-8.0.1`, …; README there), or `undefined` when this machine does not have it: a test
 * that needs that server skips then (`describe.skipIf(!binary)`).
 */
export function redisBuild(name: string): string | undefined {
  const binary = join(REDIS_BUILDS, name, 'bin', 'redis-server');
  return existsSync(binary) ? binary : undefined;
}

const REDIS_BUILDS = process.env.REDIS_BUILDS_DIR ?? '/work/shared/redis-builds';

function redisServerBinary(): string {
  return process.env.REDIS_SERVER_BIN ?? 'redis-server';
}
