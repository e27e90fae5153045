import type { RedisClient } from '../../redis/connection.js';
import { LuaScripts, type LuaScript } from '../../redis/lua-scripts.js';

/**
 * The server's Lua script (`extras.idempotency`: the acknowledgement and the processed keys' records
 * in one call), in its `.lua` file next to this loader, registered by the one Lua loader
 * (redis/lua-scripts.ts). Every key it touches is in KEYS.
 */

const SCRIPTS = {
  nrsAckAndRecord: { file: 'ack-and-record.lua' },
} as const satisfies Record<string, LuaScript>;

/** The commands `defineCommand` adds to a client; argument order is documented in the `.lua` file. */
export interface ServerScriptCommands {
  nrsAckAndRecord(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Promise<unknown>;
}

const SCRIPT_SET = new LuaScripts<ServerScriptCommands>(new URL('./', import.meta.url), SCRIPTS);

/** Registers the server's scripts on `client` (idempotent per client) and returns it typed. */
export function serverScripts(client: RedisClient): ServerScriptCommands {
  return SCRIPT_SET.on(client);
}
