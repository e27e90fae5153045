import type { RedisClient } from '../../redis/connection.js';
import { LuaScripts, type LuaScript } from '../../redis/lua-scripts.js';

/**
 * The server's Lua scripts, in their `.lua` files next to this loader, registered by the one Lua
 * loader (redis/lua-scripts.ts): `extras.idempotency`'s acknowledgement with the processed keys'
 * records in one call, and one read of `extras.priorities` lanes. Every key they touch is in KEYS.
 */

const SCRIPTS = {
  nrsAckAndRecord: { file: 'ack-and-record.lua' },
  nrsPriorityRead: { file: 'priority-read.lua' },
} as const satisfies Record<string, LuaScript>;

/** The commands `defineCommand` adds to a client; argument order is documented in the `.lua` file. */
export interface ServerScriptCommands {
  nrsAckAndRecord(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Promise<unknown>;
  nrsPriorityRead(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Promise<unknown>;
  /** The same read, its reply as Buffers (a group read as bytes, `extras.raw: 'buffers'`). */
  nrsPriorityReadBuffer(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Promise<unknown>;
}

const SCRIPT_SET = new LuaScripts<ServerScriptCommands>(new URL('./', import.meta.url), SCRIPTS);

/** Registers the server's scripts on `client` (idempotent per client) and returns it typed. */
export function serverScripts(client: RedisClient): ServerScriptCommands {
  return SCRIPT_SET.on(client);
}
