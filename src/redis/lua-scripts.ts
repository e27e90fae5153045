import { readFileSync } from 'node:fs';
import type { RedisClient } from './connection.js';

/**
 * One script: its `.lua` file, and its fixed KEYS count (`undefined` when the caller passes numkeys
 * first). `fragments`: files put in front of it, in order (after the set's prelude): Lua functions
 * several scripts call, so a rule they share is written once.
 */
export interface LuaScript {
  readonly file: string;
  readonly numberOfKeys?: number;
  readonly fragments?: readonly string[];
}

/**
 * A set of Lua scripts kept in `.lua` files next to their loader (`folder`), registered on a client
 * with ioredis `defineCommand` (EVALSHA, falling back to EVAL on NOSCRIPT; no Redis 7 functions,
 * so they run from Redis 6.2 on), once per client. `prelude`: a file put in front of every script
 * (Lua the scripts share); a script's own `fragments` follow it. Each script is built once, at the
 * first registration.
 */
export class LuaScripts<Commands> {
  private readonly sources = new Map<string, string>();
  private readonly registered = new WeakSet<object>();

  constructor(
    private readonly folder: URL,
    private readonly scripts: Readonly<Record<string, LuaScript>>,
    private readonly prelude?: string,
  ) {}

  /** Registers the scripts on `client` (idempotent per client) and returns it typed with their commands. */
  on(client: RedisClient): Commands {
    if (!this.registered.has(client)) {
      for (const [name, script] of Object.entries(this.scripts)) {
        const { numberOfKeys } = script;
        client.defineCommand(name, { lua: this.source(script), ...(numberOfKeys === undefined ? {} : { numberOfKeys }) });
      }
      this.registered.add(client);
    }
    return client as unknown as Commands;
  }

  private source(script: LuaScript): string {
    let lua = this.sources.get(script.file);
    if (lua === undefined) {
      const parts = [...(this.prelude === undefined ? [] : [this.prelude]), ...(script.fragments ?? []), script.file];
      lua = parts.map((file) => this.read(file)).join('\n');
      this.sources.set(script.file, lua);
    }
    return lua;
  }

  private read(file: string): string {
    return readFileSync(new URL(file, this.folder), 'utf8');
  }
}
