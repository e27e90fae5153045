import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCompiled } from '../helpers/compiled.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const DIR = 'build/readme-quickstart';

/**
 * The README's quickstart blocks, by file: every ```ts block right after `<!-- quickstart: <file> -->`.
 * The only change: `nestjs-redis-streams` resolves to this checkout's compiled source.
 */
function quickstartFiles(): Map<string, string> {
  const files = new Map<string, string>();
  const readme = readFileSync('README.md', 'utf8');
  for (const match of readme.matchAll(/<!-- quickstart: (\S+) -->\n```ts\n([\s\S]*?)\n```/g)) {
    const code = match[2]!.replaceAll("from 'nestjs-redis-streams'", `from '${resolve('build/src/index.js')}'`);
    files.set(match[1]!, (files.get(match[1]!) ?? '') + code + '\n');
  }
  return files;
}

describe('README quickstart, run as written', () => {
  const redis = useRedisServer();
  let worker: ChildProcess | undefined;
  let workerOutput = '';

  beforeAll(async () => {
    await ensureCompiled();
    rmSync(DIR, { recursive: true, force: true });
    mkdirSync(DIR, { recursive: true });
    const files = quickstartFiles();
    expect([...files.keys()]).toEqual(['worker.ts', 'producer.ts']);
    for (const [name, code] of files) writeFileSync(`${DIR}/${name}`, code);
    writeFileSync(`${DIR}/package.json`, '{ "type": "module" }\n');
    // What a user's project would use: ESM, strict, Nest's decorators.
    const tsc = spawnSync('npx', ['tsc', '--strict', '--target', 'ES2022', '--module', 'nodenext', '--moduleResolution', 'nodenext',
      '--experimentalDecorators', '--emitDecoratorMetadata', '--skipLibCheck', '--types', 'node', '--ignoreConfig', `${DIR}/worker.ts`, `${DIR}/producer.ts`], { encoding: 'utf8' });
    expect(tsc.stdout + tsc.stderr).toBe('');
  }, 300_000);
  afterAll(() => {
    worker?.kill('SIGKILL');
  });

  it('the worker handles the JSON order and the raw audit entry, acks both, dead-letters nothing', async () => {
    const env = { ...process.env, REDIS_URL: redis.server.url };
    worker = spawn(process.execPath, [`${DIR}/worker.js`], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    worker.stdout!.on('data', (chunk: Buffer) => (workerOutput += chunk.toString()));
    worker.stderr!.on('data', (chunk: Buffer) => (workerOutput += chunk.toString()));
    await waitFor(async () => (await redis.client.exists('audit')) === 1 && (await redis.client.exists('orders')) === 1, 'the worker to create its groups', { timeout: 20_000 });

    const producer = spawnSync(process.execPath, [`${DIR}/producer.js`], { env, encoding: 'utf8', timeout: 20_000 });
    expect(producer.status).toBe(0);
    const [, orderId, auditId] = /^emitted (\d+-\d+) (\d+-\d+)$/m.exec(producer.stdout) ?? [];
    expect(orderId).toBeDefined();

    await waitFor(() => workerOutput.includes(`order-1 ${orderId} 1\n`) && workerOutput.includes('audit kettle 1\n'), 'the worker to handle both entries', { timeout: 20_000 });
    await waitFor(async () => (await redis.client.xpending('orders', 'billing'))[0] === 0 && (await redis.client.xpending('audit', 'billing'))[0] === 0, 'both acknowledged');
    expect(await redis.client.xrange('audit', '-', '+')).toEqual([[auditId, ['item', 'kettle', 'qty', '1']]]);
    expect(await redis.client.xlen('{orders}:dead')).toBe(0);
    expect(await redis.client.xlen('{audit}:dead')).toBe(0);
    expect(workerOutput).not.toMatch(/ERROR|dead-letter/i);
  });
});
