import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { RedisClient } from './connection.js';

/**
 * One script: its `.lua` file, and its fixed KEYS count (`undefined` when the caller passes numkeys
 * first). `fragments`: files put in front of it, in order (after the set's prelude): Lua functions
 * several scripts call, so a rule they share is written once. A name is a file next to the set's
 * loader; a URL is a fragment shared across script folders (from `./scripts/`, e.g. REDIS_NOW).
 */
export interface LuaScript {
  readonly file: string;
  readonly numberOfKeys?: number;
  readonly fragments?: readonly (string | URL)[];
}

/** Fragment: Redis' clock in ms (`redisNowMs()`), for every script that reads it. */
export const REDIS_NOW = new URL('./scripts/redis-now.lua', import.meta.url);

/**
 * A set of Lua scripts kept in `.lua` files next to their loader (`folder`), registered on a client
 * with ioredis `defineCommand` (EVALSHA, falling back to EVAL on NOSCRIPT; no Redis 7 functions,
 * so they run from Redis 6.2 on), once per client. `prelude`: a file put in front of every script
 * (Lua the scripts share); a script's own `fragments` follow it. Every script is built when the set
 * is made (when its loader module loads), so a missing file fails then, naming the script and file.
 */
export class LuaScripts<Commands> {
  private readonly sources = new Map<string, string>();
  private readonly registered = new WeakSet<object>();

  constructor(
    private readonly folder: URL,
    private readonly scripts: Readonly<Record<string, LuaScript>>,
    private readonly prelude?: string,
  ) {
    for (const [name, script] of Object.entries(scripts)) this.sources.set(name, this.build(name, script));
  }

  /** Registers the scripts on `client` (idempotent per client) and returns it typed with their commands. */
  on(client: RedisClient): Commands {
    if (!this.registered.has(client)) {
      for (const [name, { numberOfKeys }] of Object.entries(this.scripts)) {
        client.defineCommand(name, { lua: this.sources.get(name)!, ...(numberOfKeys === undefined ? {} : { numberOfKeys }) });
      }
      this.registered.add(client);
    }
    return client as unknown as Commands;
  }

  /** The text script `name` is registered with (prelude, fragments, its file): what its SHA is taken of. */
  source(name: string): string {
    const lua = this.sources.get(name);
    if (lua === undefined) throw new Error(`Lua script ${name}: not in this set (${Object.keys(this.scripts).join(', ')})`);
    return lua;
  }

  private build(name: string, script: LuaScript): string {
    const parts = [...(this.prelude === undefined ? [] : [this.prelude]), ...(script.fragments ?? []), script.file];
    return parts.map((file) => this.read(name, file)).join('\n');
  }

  private read(name: string, file: string | URL): string {
    const url = typeof file === 'string' ? new URL(file, this.folder) : file;
    try {
      return readFileSync(url, 'utf8');
    } catch (error) {
      throw new Error(`Lua script ${name}: cannot read ${fileURLToPath(url)} (${(error as NodeJS.ErrnoException).code ?? String(error)})`, { cause: error });
    }
  }
}
