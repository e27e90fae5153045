import { readFileSync } from 'node:fs';
import { cpus, availableParallelism, totalmem, release } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Redis } from 'ioredis';

/** What the numbers were measured on: cores, node, redis-server, and the versions of every contender. */
export async function describeMachine(admin: Redis): Promise<Record<string, unknown>> {
  const info = await admin.info('server');
  const redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
  return {
    cores: availableParallelism(),
    cpu: cpus()[0]?.model ?? 'unknown',
    memoryGb: Math.round(totalmem() / 2 ** 30),
    os: `${process.platform} ${release()}`,
    node: process.version,
    redisServer: redisVersion,
    loadAverageAtStart: readLoadAverage(),
    versions: Object.fromEntries(
      ['ioredis', '@nestjs/core', '@nestjs/microservices', 'bullmq', 'rxjs'].map((name) => [name, packageVersion(name)]),
    ),
  };
}

function packageVersion(name: string): string {
  try {
    // Some packages do not export ./package.json: find the package folder from its entry point.
    const require = createRequire(import.meta.url);
    const entry = require.resolve(name);
    const path = join(entry.slice(0, entry.lastIndexOf(`node_modules/${name}/`) + `node_modules/${name}/`.length), 'package.json');
    return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

export function readLoadAverage(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return 'unknown';
  }
}
