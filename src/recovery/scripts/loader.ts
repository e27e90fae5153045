import { readFileSync } from 'node:fs';
import type { RedisClient } from '../../redis/connection.js';

/**
 * The recovery Lua scripts, each in its own `.lua` file next to this loader, each preceded by the
 * shared prelude `pending-checks.lua` (the owner and idle checks). They are registered
 * on a client with ioredis `defineCommand` (EVALSHA, falling back to EVAL on NOSCRIPT), once per
 * client. Every key a script touches is passed in KEYS.
 *
 * The wrappers return the scripts' raw rows; the typed functions in `../*.ts` interpret them.
 */

type Row = (string | number)[];

interface ScriptDefinition {
  readonly file: string;
  /** Fixed KEYS count, or `undefined` when the caller passes numkeys first. */
  readonly numberOfKeys?: number;
}

const SCRIPTS = {
  nrsDeadLetter: { file: 'dead-letter.lua', numberOfKeys: 2 },
  nrsClaimIfOwned: { file: 'claim-if-owned.lua', numberOfKeys: 1 },
  nrsReapConsumers: { file: 'reap-consumers.lua' },
  nrsRedrive: { file: 'redrive.lua', numberOfKeys: 2 },
  nrsReleaseForRetry: { file: 'release-for-retry.lua' },
  nrsClaimRetry: { file: 'claim-retry.lua', numberOfKeys: 1 },
} as const satisfies Record<string, ScriptDefinition>;

type ScriptName = keyof typeof SCRIPTS;

/** The commands `defineCommand` adds to a client; argument order is documented in each `.lua` file. */
export interface RecoveryScriptCommands {
  nrsDeadLetter(source: string, deadLetter: string, ...args: (string | number)[]): Promise<Row[]>;
  nrsClaimIfOwned(stream: string, ...args: (string | number)[]): Promise<Row[]>;
  nrsReapConsumers(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Promise<Row[]>;
  nrsRedrive(deadLetter: string, source: string, ...args: (string | number)[]): Promise<Row[]>;
  nrsReleaseForRetry(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Promise<Row[]>;
  /** The Buffer variant `defineCommand` adds: the claimed fields come back as the exact bytes. */
  nrsClaimRetryBuffer(stream: string, ...args: (string | number)[]): Promise<(Buffer | Buffer[])[][]>;
}

/** Upper bound on ids (or consumers) in one script call: a script blocks Redis while it runs. */
export const MAX_SCRIPT_BATCH = 1000;

/** Lua put in front of every script: the pending-entry checks they share. */
const PRELUDE = 'pending-checks.lua';

const sources = new Map<ScriptName, string>();
const registered = new WeakSet<object>();

function readLua(file: string): string {
  return readFileSync(new URL(`./${file}`, import.meta.url), 'utf8');
}

function scriptSource(name: ScriptName): string {
  let lua = sources.get(name);
  if (lua === undefined) {
    lua = `${readLua(PRELUDE)}\n${readLua(SCRIPTS[name].file)}`;
    sources.set(name, lua);
  }
  return lua;
}

/** Registers the recovery scripts on `client` (idempotent per client) and returns it typed. */
export function recoveryScripts(client: RedisClient): RecoveryScriptCommands {
  if (!registered.has(client)) {
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
      const definition: ScriptDefinition = SCRIPTS[name];
      client.defineCommand(name, {
        lua: scriptSource(name),
        ...(definition.numberOfKeys === undefined ? {} : { numberOfKeys: definition.numberOfKeys }),
      });
    }
    registered.add(client);
  }
  return client as unknown as RecoveryScriptCommands;
}

/** Splits `items` into batches of at most `size` (each batch is one script call). */
export function batches<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
