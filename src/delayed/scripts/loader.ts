import { readFileSync } from 'node:fs';
import type { RedisClient } from '../../redis/connection.js';

/**
 * The delayed-entry Lua scripts, each in its own `.lua` file next to this loader, registered on a
 * client with ioredis `defineCommand` (EVALSHA, falling back to EVAL on NOSCRIPT; no Redis 7
 * functions, so they run from Redis 6.2 on), once per client. Every key they touch is in KEYS.
 */

type Reply = (string | number | Buffer)[];

const SCRIPTS = {
  nrsDelayedHold: { file: 'hold.lua', numberOfKeys: 2 },
  nrsDelayedPromote: { file: 'promote.lua', numberOfKeys: 3 },
  nrsDelayedList: { file: 'list.lua', numberOfKeys: 2 },
} as const;

type ScriptName = keyof typeof SCRIPTS;

/** The commands `defineCommand` adds to a client; argument order is documented in each `.lua` file. */
export interface DelayedScriptCommands {
  nrsDelayedHold(schedule: string, bodies: string, ...args: (string | Buffer)[]): Promise<Reply>;
  nrsDelayedPromote(stream: string, schedule: string, bodies: string, limit: number): Promise<Reply>;
  nrsDelayedList(schedule: string, bodies: string, offset: number, count: number): Promise<(number | [string, number, string[] | null])[]>;
}

const registered = new WeakSet<object>();

function readLua(file: string): string {
  return readFileSync(new URL(`./${file}`, import.meta.url), 'utf8');
}

/** Registers the delayed-entry scripts on `client` (idempotent per client) and returns it typed. */
export function delayedScripts(client: RedisClient): DelayedScriptCommands {
  if (!registered.has(client)) {
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
      const { file, numberOfKeys } = SCRIPTS[name];
      client.defineCommand(name, { lua: readLua(file), numberOfKeys });
    }
    registered.add(client);
  }
  return client as unknown as DelayedScriptCommands;
}
