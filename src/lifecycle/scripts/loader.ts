import type { RedisClient } from '../../redis/connection.js';
import { LuaScripts, REDIS_NOW, type LuaScript } from '../../redis/lua-scripts.js';

/**
 * The entry-lifecycle Lua scripts, each in its own `.lua` file next to this loader, registered by
 * the one Lua loader (redis/lua-scripts.ts), which puts Redis' clock (`REDIS_NOW`) in front of the
 * script that reads it. Every key they touch is in KEYS.
 */

const SCRIPTS = {
  nrsEntryStatus: { file: 'entry-status.lua', numberOfKeys: 3 },
  nrsFindDeadLetter: { file: 'find-dead-letter.lua', numberOfKeys: 1 },
  nrsWriteRecord: { file: 'write-record.lua', numberOfKeys: 2 },
  nrsReadRecord: { file: 'read-record.lua', numberOfKeys: 2 },
  nrsCancel: { file: 'cancel.lua', numberOfKeys: 6, fragments: [REDIS_NOW] },
} as const satisfies Record<string, LuaScript>;

/** One group's row of entry-status.lua: group, last-delivered id, consumer ('' when not pending), idle ms and deliveries (-1 when not pending). */
export type GroupRow = [group: string, lastDelivered: string, consumer: string, idle: number, deliveries: number];

/** One row of find-dead-letter.lua. */
export type DeadLetterRow = [id: string, group: string, consumer: string, deliveries: string, reason: string, error: string, at: string];

/** The commands `defineCommand` adds to a client; argument order is documented in each `.lua` file. */
export interface LifecycleScriptCommands {
  nrsEntryStatus(stream: string, schedule: string, promoted: string, id: string, isStreamId: '1' | '0', group: string): Promise<[number, number, number, string, ...GroupRow[]]>;
  nrsFindDeadLetter(deadLetters: string, source: string, id: string, limit: number): Promise<[number, ...DeadLetterRow[]]>;
  nrsWriteRecord(record: string, notices: string, value: string | Buffer, ttlMs: number, id: string, kind: 'progress' | 'result' | 'settled', maxLen: number): Promise<string>;
  nrsCancel(
    stream: string, dead: string, schedule: string, bodies: string, recurring: string, marker: string,
    id: string, reason: string, isStreamId: '1' | '0', markerTtlMs: number,
  ): Promise<[string, string]>;
  nrsReadRecordBuffer(record: string, notices: string, consume: '1' | '0'): Promise<[Buffer | null, Buffer]>;
}

const SCRIPT_SET = new LuaScripts<LifecycleScriptCommands>(new URL('./', import.meta.url), SCRIPTS);

/** Registers the lifecycle scripts on `client` (idempotent per client) and returns it typed. */
export function lifecycleScripts(client: RedisClient): LifecycleScriptCommands {
  return SCRIPT_SET.on(client);
}
