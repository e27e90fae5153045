// `node scripts/listen-phases.mjs [runs] [A=<tree> B=<tree> ...]`: what `listen()` costs until the
// first entry, per phase, per compiled tree (default `A=.`; each with build/ from `npm run compile`),
// in fresh processes interleaved round by round against one private redis-server (the test
// harness's, never 6379). Each run fills a stream with 100 entries and starts the bench's consume
// worker (an @EventPattern on the stream, a @MessagePattern on `<stream>.rpc`, default options;
// `OPTIONS='{"recovery":{"leases":false}}'` merges server options) in a fresh process. Prints per
// phase the CPU (`process.cpuUsage()`, ms) of every run and the commands Redis saw in it (MONITOR,
// Lua's own calls included), then the commands of the whole start by name.
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

/** [name, first mark, last mark]: the marks the child sets (see `child`). */
const PHASES = [
  ["Nest's listen() before ours", 'listen', 'serverListen'],
  ['telemetry, building the parts', 'serverListen', 'ready'],
  ['connections, probe, groups, partition checks', 'ready', 'readyDone'],
  ['pause state', 'readyDone', 'flowDone'],
  ['lease thread, readers, recovery, promoter starts', 'flowDone', 'listening'],
  ['first reads to the first handler call', 'listening', 'firstEntry'],
  ['listen() to the first entry', 'listen', 'firstEntry'],
];
/** Commands whose first argument says what they do. */
const CONTAINERS = new Set(['XGROUP', 'XINFO', 'CLIENT', 'COMMAND', 'SCRIPT', 'CONFIG']);

if (process.argv[2] === '--child') await child(process.argv[3], process.argv[4], process.argv[5]);
else await parent();

async function parent() {
  const runs = Number(process.argv[2] ?? 4);
  const trees = (process.argv.length > 3 ? process.argv.slice(3) : ['A=.']).map((arg) => {
    const [label, dir] = arg.split('=');
    return { label, dir: resolve(dir), results: [] };
  });
  const { RedisServerProcess } = await import('../build/test/helpers/redis-server.js');
  const server = await RedisServerProcess.start();
  const admin = server.client();
  try {
    for (let round = 0; round < runs; round++) {
      for (const tree of round % 2 === 0 ? trees : [...trees].reverse()) {
        const stream = `listen-phases:${tree.label}:${round}`;
        for (let i = 0; i < 100; i++) await admin.xadd(stream, '*', 'data', JSON.stringify({ i }));
        const monitor = await admin.monitor();
        const commands = [];
        monitor.on('monitor', (time, args) => {
          const name = String(args[0]).toUpperCase();
          commands.push({ atMs: Number(time) * 1000, name: CONTAINERS.has(name) ? `${name} ${String(args[1]).toUpperCase()}` : name });
        });
        // Not execFileSync: the MONITOR replies come in on this event loop meanwhile.
        const { stdout: out } = await promisify(execFile)(process.execPath, [import.meta.filename, '--child', tree.dir, server.url, stream]);
        monitor.disconnect();
        const marks = new Map(JSON.parse(out).map((mark) => [mark.name, mark]));
        const within = (from, to) => commands.filter(({ atMs }) => atMs >= marks.get(from).atMs - 1 && atMs <= marks.get(to).atMs + 1);
        tree.results.push({
          phases: PHASES.map(([, from, to]) => ({ cpuMs: marks.get(to).cpuMs - marks.get(from).cpuMs, commands: within(from, to).length })),
          byName: countByName(within('listen', 'firstEntry')),
        });
      }
    }
  } finally {
    admin.disconnect();
    await server.stop();
  }
  for (const tree of trees) {
    console.log(`${tree.label} (${tree.dir}):`);
    PHASES.forEach(([name], index) => {
      const cpu = tree.results.map((result) => result.phases[index].cpuMs.toFixed(1)).join(' / ');
      const commands = tree.results.map((result) => result.phases[index].commands).join(' / ');
      console.log(`  ${name}: ${cpu} ms CPU; ${commands} commands`);
    });
    const byName = tree.results.at(-1).byName;
    console.log(`  commands of the last run: ${Object.entries(byName).map(([name, count]) => `${name} ${count}`).join(', ')}`);
  }
}

function countByName(commands) {
  const counts = {};
  for (const { name } of commands) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

/** One fresh process: the consume worker's Nest app, marks around `listen()` and its phases. */
async function child(dir, url, stream) {
  const marks = [];
  const mark = (name) => {
    const { user, system } = process.cpuUsage();
    marks.push({ name, cpuMs: (user + system) / 1000, atMs: Date.now() });
  };
  const fromTree = createRequire(`${dir}/package.json`);
  const load = (specifier) => import(pathToFileURL(fromTree.resolve(specifier)).href);
  const built = (path) => import(pathToFileURL(`${dir}/build/src/${path}`).href);
  await load('reflect-metadata');
  const { Controller, Module } = await load('@nestjs/common');
  const { NestFactory } = await load('@nestjs/core');
  const { EventPattern, MessagePattern } = await load('@nestjs/microservices');
  const { RedisStreamsServer } = await built('index.js');
  const { ServerConnections } = await built('server/server-connections.js');
  const { ServerFlow } = await built('server/server-flow.js');
  const around = (prototype, method, before, after) => {
    const original = prototype[method];
    prototype[method] = async function (...args) {
      if (before !== undefined) mark(before);
      const result = await original.apply(this, args);
      mark(after);
      return result;
    };
  };
  around(ServerConnections.prototype, 'ready', 'ready', 'readyDone');
  around(ServerFlow.prototype, 'start', undefined, 'flowDone');
  around(RedisStreamsServer.prototype, 'listen', 'serverListen', 'listening');

  let firstEntry;
  const first = new Promise((resolve) => (firstEntry = resolve));
  class Handlers {
    onEvent() {
      if (!marks.some(({ name }) => name === 'firstEntry')) mark('firstEntry');
      firstEntry();
    }
    onRequest(data) {
      return data;
    }
  }
  EventPattern(stream)(Handlers.prototype, 'onEvent', Object.getOwnPropertyDescriptor(Handlers.prototype, 'onEvent'));
  MessagePattern(`${stream}.rpc`)(Handlers.prototype, 'onRequest', Object.getOwnPropertyDescriptor(Handlers.prototype, 'onRequest'));
  Controller()(Handlers);
  class Worker {}
  Module({ controllers: [Handlers] })(Worker);
  const options = { connection: url, group: 'bench', consumer: 'bench-worker', ...JSON.parse(process.env.OPTIONS ?? '{}') };
  const app = await NestFactory.createMicroservice(Worker, { strategy: new RedisStreamsServer(options), logger: ['error', 'warn'] });
  mark('listen');
  await app.listen();
  await first;
  process.stdout.write(JSON.stringify(marks));
  await app.close();
}
