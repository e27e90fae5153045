import type { RedisClient } from '../../redis/connection.js';
import { LuaScripts, REDIS_NOW, type LuaScript } from '../../redis/lua-scripts.js';

/**
 * The flow-control Lua scripts (shared rate limits and global concurrency), each in its own
 * `.lua` file next to this loader, registered by the one Lua loader (redis/lua-scripts.ts), which
 * puts the fragments they share in front of them.
 * Every key they touch is in KEYS.
 */

/** The token-bucket and permit arithmetic, each written once (functions the scripts below call). */
const TOKEN_BUCKET = [REDIS_NOW, 'token-bucket.lua'] as const;
const PERMIT_HOLDS = [REDIS_NOW, 'permit-holds.lua'] as const;

const SCRIPTS = {
  nrsRateLimit: { file: 'rate-limit.lua', numberOfKeys: 1, fragments: TOKEN_BUCKET },
  nrsPermits: { file: 'permits.lua', numberOfKeys: 2, fragments: PERMIT_HOLDS },
} as const satisfies Record<string, LuaScript>;

/** The commands `defineCommand` adds to a client; argument order is documented in each `.lua` file. */
export interface FlowScriptCommands {
  nrsRateLimit(bucket: string, op: 'take' | 'refund' | 'backoff', max: number, perMs: number, n: number): Promise<[number, number]>;
  nrsPermits(holders: string, leases: string, op: 'acquire' | 'release' | 'renew', worker: string, n: number | string, max: number, leaseMs: number): Promise<[number, number]>;
}

const SCRIPT_SET = new LuaScripts<FlowScriptCommands>(new URL('./', import.meta.url), SCRIPTS);

/** Registers the flow-control scripts on `client` (idempotent per client) and returns it typed. */
export function flowScripts(client: RedisClient): FlowScriptCommands {
  return SCRIPT_SET.on(client);
}
