import type { RedisClient } from '../../redis/connection.js';
import { LuaScripts, REDIS_NOW, type LuaScript } from '../../redis/lua-scripts.js';

/**
 * The delayed-entry Lua scripts, each in its own `.lua` file next to this loader, registered by
 * the one Lua loader (redis/lua-scripts.ts), which puts the fragments a script names in front of
 * it (Redis' clock, `REDIS_NOW`, for each script that reads it). Every key they touch is in KEYS.
 */

type Reply = (string | number | Buffer)[];
/** A body's words as a Buffer variant returns them: 5 XADD words, the recurrence (a cron table as an array), field/value pairs. */
export type BufferWords = (Buffer | (Buffer | number)[])[];

/** How a held entry is read back (its body, a page of them), written once for the list scripts. */
const HELD_PAGE = [REDIS_NOW, 'held-page.lua'] as const;

const SCRIPTS = {
  nrsDelayedHold: { file: 'hold.lua', numberOfKeys: 3, fragments: [REDIS_NOW] },
  nrsDelayedPromote: { file: 'promote.lua', numberOfKeys: 5, fragments: [REDIS_NOW] },
  nrsDelayedList: { file: 'list.lua', numberOfKeys: 2, fragments: HELD_PAGE },
  nrsDelayedRefill: { file: 'refill.lua', numberOfKeys: 2 },
  nrsDelayedListRecurring: { file: 'list-recurring.lua', numberOfKeys: 3, fragments: HELD_PAGE },
  nrsDelayedListPage: { file: 'list-page.lua', numberOfKeys: 2, fragments: HELD_PAGE },
} as const satisfies Record<string, LuaScript>;

/** The commands `defineCommand` adds to a client; argument order is documented in each `.lua` file. */
export interface DelayedScriptCommands {
  nrsDelayedHold(schedule: string, bodies: string, recurring: string, wakeChannel: string, ...args: (string | Buffer)[]): Promise<Reply>;
  nrsDelayedPromote(stream: string, schedule: string, bodies: string, promoted: string, promotedAt: string, limit: number, refillBelow: number, listIds: string, keepIdsMs: number): Promise<(string | number | Buffer | Reply)[]>;
  nrsDelayedRefill(schedule: string, bodies: string, hold: string, expression: string, timezone: string, keep: number, afterMs: number, ...occurrences: number[]): Promise<[listed: number, dueMs: number]>;
  nrsDelayedListRecurring(schedule: string, bodies: string, recurring: string): Promise<(number | [string, number, (string | number[])[] | null])[]>;
  nrsDelayedList(schedule: string, bodies: string, offset: number, count: number): Promise<(number | [string, number, string[] | null])[]>;
  /** The Buffer variants (every bulk string a Buffer): field values byte for byte. */
  nrsDelayedListPageBuffer(schedule: string, bodies: string, afterDue: string, afterHold: string, count: number): Promise<(number | [Buffer, number, BufferWords | null])[]>;
  nrsDelayedListRecurringBuffer(schedule: string, bodies: string, recurring: string): Promise<(number | [Buffer, number, BufferWords | null])[]>;
}

const SCRIPT_SET = new LuaScripts<DelayedScriptCommands>(new URL('./', import.meta.url), SCRIPTS);

/** The text a delayed-entry script is registered with, fragments included (its SHA is taken of it). */
export function delayedScriptSource(name: keyof typeof SCRIPTS): string {
  return SCRIPT_SET.source(name);
}

/** Registers the delayed-entry scripts on `client` (idempotent per client) and returns it typed. */
export function delayedScripts(client: RedisClient): DelayedScriptCommands {
  return SCRIPT_SET.on(client);
}
