import { createRequire } from 'node:module';
import type * as IORedis from 'ioredis';

/**
 * ioredis' classes, loaded with `require`. ioredis is CommonJS; an ESM `import` of it makes Node's
 * ESM loader lex it and route each of its nested `require`s (~66 files) through the ESM loader as
 * well, which costs the lease thread, whose start-up is mostly loading ioredis, ~50 ms of CPU
 * (docs/benchmarks.md, "Lease thread"). `require` gives the same module instance an `import` gives,
 * so `instanceof` holds for clients users create. Types come from the package as usual.
 */
const ioredis = createRequire(import.meta.url)('ioredis') as typeof IORedis;

export const Redis = ioredis.Redis;
export type Redis = IORedis.Redis;
export const Cluster = ioredis.Cluster;
export type Cluster = IORedis.Cluster;
