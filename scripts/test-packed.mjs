// `npm run test:packed` (run by .ci/run, not by `npm test`: it installs from the registry): packs the
// tarball, installs it into a scratch Nest 12 ESM app and a Nest 11 CommonJS app in temp dirs,
// compiles each under `strict`, and runs an emit → handler and a send → reply round trip against a
// private redis-server. Prints one line per app and exits non-zero if any fails.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureRedisServer } from './redis-server-provision.mjs';

ensureRedisServer();
const run = (cmd, args, options = {}) => spawnSync(cmd, args, { encoding: 'utf8', ...options });
const must = (what, result) => {
  if (result.status !== 0) {
    console.error(`${what} failed:\n${result.stdout ?? ''}${result.stderr ?? ''}`);
    process.exit(1);
  }
  return result;
};

must('compile (for the test harness)', run('npx', ['tsc', '-p', 'tsconfig.json']));
const { RedisServerProcess } = await import('../build/test/helpers/redis-server.js');
const work = mkdtempSync(join(tmpdir(), 'nrs-packed-'));
const packed = must('npm pack', run('npm', ['pack', '--json', '--pack-destination', work]));
const tarball = join(work, JSON.parse(packed.stdout.slice(packed.stdout.indexOf('[\n')))[0].filename);

const APPS = [
  { name: 'Nest 12, ESM', type: 'module', nest: { common: '12.5.1', core: '12.5.1', microservices: '12.1.1' } },
  { name: 'Nest 11, CommonJS', type: 'commonjs', nest: { common: '11', core: '11', microservices: '11' } },
];
const tsc = resolve('node_modules/typescript/bin/tsc');
const server = await RedisServerProcess.start();
let failed = 0;
try {
  for (const app of APPS) {
    const dir = join(work, app.type);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `scratch-${app.type}`, private: true, type: app.type }));
    // ioredis 6.1's declarations import the untyped `redis-errors`: a strict app that checks
    // libraries (skipLibCheck false, as here) needs its types, as the README's Install says.
    const deps = [tarball, ...Object.entries(app.nest).map(([name, version]) => `@nestjs/${name}@${version}`), 'ioredis@6', 'rxjs@7', 'reflect-metadata@0.2', '@types/node@20', '@types/redis-errors@1'];
    must(`${app.name}: npm install`, run('npm', ['install', '--no-audit', '--no-fund', '--silent', ...deps], { cwd: dir }));
    copyFileSync('test/packed/app.ts.txt', join(dir, 'main.ts'));
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { strict: true, target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', experimentalDecorators: true, emitDecoratorMetadata: true, skipLibCheck: false, types: ['node'], outDir: 'out' },
      files: ['main.ts'],
    }));
    const compiled = run(process.execPath, [tsc, '-p', '.'], { cwd: dir });
    const ran = compiled.status === 0 ? run(process.execPath, ['out/main.js'], { cwd: dir, env: { ...process.env, REDIS_URL: server.url }, timeout: 60_000 }) : undefined;
    const versionOf = (path) => JSON.parse(readFileSync(join(dir, 'node_modules', path, 'package.json'), 'utf8')).version;
    const versions = [...readdirSync(join(dir, 'node_modules/@nestjs')).map((name) => `${name}@${versionOf(`@nestjs/${name}`)}`), `ioredis@${versionOf('ioredis')}`];
    if (compiled.status !== 0) {
      failed++;
      console.log(`FAIL ${app.name}: tsc under strict:\n${compiled.stdout}${compiled.stderr}`);
    } else if (ran?.status !== 0 || !ran.stdout.includes('round trips ok')) {
      failed++;
      console.log(`FAIL ${app.name}: run:\n${ran?.stdout ?? ''}${ran?.stderr ?? ''}`);
    } else {
      console.log(`ok   ${app.name} (${versions.join(', ')}, node ${process.version}): strict compile, emit → handler, send → reply`);
    }
  }
} finally {
  await server.stop();
  rmSync(work, { recursive: true, force: true });
}
process.exit(failed === 0 ? 0 : 1);
