import type { RedisClient } from '../../redis/connection.js';
import { LuaScripts, REDIS_NOW, type LuaScript } from '../../redis/lua-scripts.js';

/**
 * The recovery Lua scripts, each in its own `.lua` file next to this loader, each preceded by the
 * shared prelude `pending-checks.lua` (the owner and idle checks), registered by the one Lua
 * loader (redis/lua-scripts.ts), which also puts the fragments a script names in front of it (the
 * claim both claim scripts make, `claim-entry.lua`; Redis' clock, `REDIS_NOW`). Every key a script
 * touches is passed in KEYS.
 *
 * The wrappers return the scripts' raw rows; the typed functions in `../*.ts` interpret them.
 */

type Row = (string | number)[];

/** The XCLAIM of an entry and the row it makes, written once for both claim scripts. */
const CLAIM_ENTRY = ['claim-entry.lua'] as const;

const SCRIPTS = {
  nrsDeadLetter: { file: 'dead-letter.lua', numberOfKeys: 2, fragments: [REDIS_NOW] },
  nrsClaimIfOwned: { file: 'claim-if-owned.lua', numberOfKeys: 1 },
  nrsReapConsumers: { file: 'reap-consumers.lua' },
  nrsRedrive: { file: 'redrive.lua', numberOfKeys: 2 },
  nrsReleaseForRetry: { file: 'release-for-retry.lua' },
  nrsClaimRetry: { file: 'claim-retry.lua', numberOfKeys: 1, fragments: CLAIM_ENTRY },
  nrsClaimIdle: { file: 'claim-idle.lua', numberOfKeys: 1, fragments: CLAIM_ENTRY },
} as const satisfies Record<string, LuaScript>;

/** The commands `defineCommand` adds to a client; argument order is documented in each `.lua` file. */
export interface RecoveryScriptCommands {
  nrsDeadLetter(source: string, deadLetter: string, ...args: (string | number)[]): Promise<Row[]>;
  nrsClaimIfOwned(stream: string, ...args: (string | number)[]): Promise<Row[]>;
  nrsReapConsumers(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Promise<Row[]>;
  nrsRedrive(deadLetter: string, source: string, ...args: (string | number)[]): Promise<Row[]>;
  nrsReleaseForRetry(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Promise<Row[]>;
  /** The Buffer variant `defineCommand` adds: the claimed fields come back as the exact bytes. */
  nrsClaimRetryBuffer(stream: string, ...args: (string | number)[]): Promise<(Buffer | Buffer[])[][]>;
  /** The same for the claim of idle entries. */
  nrsClaimIdleBuffer(stream: string, ...args: (string | number)[]): Promise<(Buffer | Buffer[])[][]>;
}

/** Upper bound on ids (or consumers) in one script call: a script blocks Redis while it runs. */
export const MAX_SCRIPT_BATCH = 1000;

/** Lua put in front of every script: the pending-entry checks they share. */
const SCRIPT_SET = new LuaScripts<RecoveryScriptCommands>(new URL('./', import.meta.url), SCRIPTS, 'pending-checks.lua');

/** Registers the recovery scripts on `client` (idempotent per client) and returns it typed. */
export function recoveryScripts(client: RedisClient): RecoveryScriptCommands {
  return SCRIPT_SET.on(client);
}

/** Splits `items` into batches of at most `size` (each batch is one script call). */
export function batches<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
