// Memory over a long run (docs/benchmarks.md "Memory over a long run"): a worker child (our server,
// one @EventPattern and one @MessagePattern) and a load child (our client: events and requests at
// a fixed rate) against a private redis-server. Every `sampleSeconds` each child reports RSS and the
// heap used after a full GC; after the warm-up and at the end each writes a heap snapshot, and the
// two are compared by live objects per constructor. Not part of the suite or of `npm run bench`:
//
//   npm run compile && node build/bench/memory-soak.js [minutes] [events/s] [requests/s]
//
// Snapshots go to $SOAK_DIR (default a fresh temporary directory); SOAK_SNAPSHOTS=0 takes none (a
// run for RSS), SOAK_SAMPLE_SECONDS sets the sampling interval (default 15), SOAK_WARMUP_SECONDS
// the time before the first snapshot (default 60).
import 'reflect-metadata';
import { fork } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeHeapSnapshot } from 'node:v8';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, MessagePattern, Payload, type MicroserviceOptions } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { RedisStreamsClient, RedisStreamsServer } from '../src/index.js';
import { RedisServerProcess } from '../test/helpers/redis-server.js';

type Role = 'worker' | 'load';
type ToChild = { type: 'snapshot'; file: string } | { type: 'sample' } | { type: 'stop' };
type Sample = { rssMb: number; heapMb: number; externalMb: number; cpuSeconds: number; handled: number; failed: number };
type FromChild = { type: 'ready' } | { type: 'snapshot'; file: string } | ({ type: 'sample' } & Sample) | { type: 'stopped' };

const [role, arg] = process.argv.slice(2) as [string | undefined, string | undefined];

function send(message: FromChild, then?: () => void): void {
  process.send?.(message, undefined, undefined, then);
}

/** RSS, and the heap and external memory after a full GC (children run with --expose-gc), in MB; CPU time so far. */
function measure(): Omit<Sample, 'handled' | 'failed'> {
  (globalThis as { gc?: () => void }).gc?.();
  const usage = process.memoryUsage();
  const cpu = process.cpuUsage();
  return { rssMb: usage.rss / 2 ** 20, heapMb: usage.heapUsed / 2 ** 20, externalMb: usage.external / 2 ** 20, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

async function runWorker(url: string): Promise<void> {
  let handled = 0;
  @Controller()
  class SoakController {
    @EventPattern('soak')
    onEvent(@Payload() _data: unknown): void {
      handled++;
    }

    @MessagePattern('soak.rpc')
    onRequest(@Payload() data: unknown): unknown {
      handled++;
      return data;
    }
  }
  @Module({ controllers: [SoakController] })
  class SoakModule {}
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(SoakModule, {
    strategy: new RedisStreamsServer({ connection: url, group: 'soak', consumer: 'soak-worker' }),
    logger: ['error', 'warn'],
  });
  await app.listen();
  serve(() => ({ handled, failed: 0 }), () => app.close());
}

async function runLoad(url: string, eventsPerSecond: number, requestsPerSecond: number): Promise<void> {
  const client = new RedisStreamsClient({ connection: url, trim: { maxLen: 10_000 } });
  await client.connect();
  let done = 0;
  let failed = 0;
  let n = 0;
  const count = (promise: Promise<unknown>): void => {
    promise.then(() => done++, () => failed++);
  };
  // 10 rounds a second, each sending its share (the remainder carried, so the rates are exact).
  let events = 0;
  let requests = 0;
  const timer = setInterval(() => {
    events += eventsPerSecond / 10;
    requests += requestsPerSecond / 10;
    for (; events >= 1; events--) count(lastValueFrom(client.emit('soak', { n: n++ })));
    for (; requests >= 1; requests--) count(lastValueFrom(client.send('soak.rpc', { n: n++ })));
  }, 100);
  serve(() => ({ handled: done, failed }), async () => {
    clearInterval(timer);
    await client.close();
  });
}

/** Answers the driver's samples, snapshots and stop. */
function serve(counts: () => { handled: number; failed: number }, stop: () => Promise<void>): void {
  process.on('message', (message: ToChild) => {
    if (message.type === 'sample') send({ type: 'sample', ...measure(), ...counts() });
    else if (message.type === 'snapshot') send({ type: 'snapshot', file: writeHeapSnapshot(message.file) });
    else void stop().then(() => send({ type: 'stopped' }, () => process.disconnect()));
  });
  send({ type: 'ready' });
}

// ---- driver ----

/** Live objects per constructor name in a .heapsnapshot (objects, closures, arrays, strings by type). */
function constructorCounts(file: string): Map<string, { count: number; bytes: number }> {
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
    nodes: number[];
    strings: string[];
  };
  const { node_fields: fields, node_types: types } = snapshot.snapshot.meta;
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const counts = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < snapshot.nodes.length; i += width) {
    const type = types[0][snapshot.nodes[i + typeAt] as number] as string;
    const key = type === 'object' || type === 'closure' ? `${type}:${snapshot.strings[snapshot.nodes[i + nameAt] as number]}` : type;
    const entry = counts.get(key) ?? { count: 0, bytes: 0 };
    entry.count++;
    entry.bytes += snapshot.nodes[i + sizeAt] as number;
    counts.set(key, entry);
  }
  return counts;
}

function compare(role: Role, before: string, after: string): void {
  const a = constructorCounts(before);
  const b = constructorCounts(after);
  const rows = [...new Set([...a.keys(), ...b.keys()])]
    .map((key) => ({ key, count: (b.get(key)?.count ?? 0) - (a.get(key)?.count ?? 0), bytes: (b.get(key)?.bytes ?? 0) - (a.get(key)?.bytes ?? 0), total: b.get(key)?.count ?? 0 }))
    .filter((row) => row.count !== 0 || row.bytes !== 0)
    .sort((x, y) => Math.abs(y.bytes) - Math.abs(x.bytes))
    .slice(0, 25);
  const total = (counts: Map<string, { count: number; bytes: number }>) => [...counts.values()].reduce((sum, row) => sum + row.bytes, 0) / 2 ** 20;
  console.log(`\n${role}: live heap ${total(a).toFixed(2)} MB after warm-up, ${total(b).toFixed(2)} MB at the end; largest changes (objects, bytes, objects at the end):`);
  for (const row of rows) console.log(`  ${row.key.padEnd(48)} ${String(row.count).padStart(8)} ${String(row.bytes).padStart(10)} ${String(row.total).padStart(8)}`);
}

function child(role: Role, args: string[]): { ask: <T extends FromChild['type']>(message: ToChild, reply: T) => Promise<Extract<FromChild, { type: T }>>; ready: Promise<void> } {
  const proc = fork(fileURLToPath(import.meta.url), [role, ...args], { execArgv: ['--expose-gc'] });
  const waiting: Array<{ type: string; resolve: (message: FromChild) => void }> = [];
  proc.on('message', (message: FromChild) => {
    const at = waiting.findIndex((waiter) => waiter.type === message.type);
    if (at >= 0) waiting.splice(at, 1)[0]?.resolve(message);
  });
  proc.on('exit', (code) => {
    if (code !== 0) console.error(`${role} exited with ${code}`);
  });
  const next = (type: string) => new Promise<FromChild>((resolve) => waiting.push({ type, resolve }));
  const ready = next('ready').then(() => undefined);
  return {
    ready,
    ask: (message, reply) => {
      const answer = next(reply);
      proc.send(message);
      return answer as never;
    },
  };
}

async function drive(minutes: number, eventsPerSecond: number, requestsPerSecond: number): Promise<void> {
  const dir = process.env.SOAK_DIR ?? mkdtempSync(join(tmpdir(), 'soak-'));
  const redis = await RedisServerProcess.start();
  const worker = child('worker', [redis.url]);
  await worker.ready;
  const load = child('load', [redis.url, String(eventsPerSecond), String(requestsPerSecond)]);
  await load.ready;
  const children = { worker, load } as const;
  const sampleMs = Number(process.env.SOAK_SAMPLE_SECONDS ?? 15) * 1000;
  const warmUpMs = Number(process.env.SOAK_WARMUP_SECONDS ?? 60) * 1000;
  const started = Date.now();
  const sample = async (): Promise<void> => {
    const line = [`${Math.round((Date.now() - started) / 1000)}s`.padStart(5)];
    for (const [role, c] of Object.entries(children)) {
      const s = await c.ask({ type: 'sample' }, 'sample');
      line.push(`${role} rss ${s.rssMb.toFixed(1)} heap ${s.heapMb.toFixed(2)} ext ${s.externalMb.toFixed(2)} MB cpu ${s.cpuSeconds.toFixed(0)} s (${s.handled} done${s.failed ? `, ${s.failed} failed` : ''})`);
    }
    console.log(line.join(' | '));
  };
  // The load first: while the worker writes its snapshot (seconds, blocked) requests pile up in
  // the load process, and its snapshot would count them. A snapshot leaves RSS far higher (the
  // serializer's memory is not given back), so SOAK_SNAPSHOTS=0 runs for RSS take none.
  const snapshots = process.env.SOAK_SNAPSHOTS !== '0';
  const snapshot = async (name: string): Promise<void> => {
    if (!snapshots) return;
    for (const role of ['load', 'worker'] as const) await children[role].ask({ type: 'snapshot', file: join(dir, `${role}-${name}.heapsnapshot`) }, 'snapshot');
  };
  const until = async (ms: number): Promise<void> => {
    while (Date.now() - started < ms) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(sampleMs, ms - (Date.now() - started))));
      await sample();
    }
  };
  await until(warmUpMs);
  await snapshot('start');
  await until(warmUpMs + minutes * 60_000);
  await snapshot('end');
  await load.ask({ type: 'stop' }, 'stopped');
  await worker.ask({ type: 'stop' }, 'stopped');
  await redis.stop();
  if (snapshots) {
    for (const role of ['worker', 'load'] as const) compare(role, join(dir, `${role}-start.heapsnapshot`), join(dir, `${role}-end.heapsnapshot`));
    console.log(`\nsnapshots in ${dir}`);
  }
  process.exit(0);
}

if (role === 'worker') await runWorker(arg as string);
else if (role === 'load') await runLoad(arg as string, Number(process.argv[4]), Number(process.argv[5]));
else await drive(Number(role ?? 4), Number(arg ?? 500), Number(process.argv[4] ?? 50));
