import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve('src');

/** Imports and re-exports that load a module at run time: `import type` / `export type` load nothing. */
const RUNTIME_IMPORT = /(?:^|\n)\s*(import|export)\s+(?!type\b)([^'";]*?)\bfrom\s+'([^']+)'/g;

/** True when every name an import clause brings in is marked `type` (`{ type A, type B }`). */
function typesOnly(clause: string): boolean {
  const names = /^\{([^}]*)\}$/.exec(clause.trim());
  if (names === null) return false;
  return (names[1] as string)
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '')
    .every((name) => name.startsWith('type '));
}

/** The src/ files `entry` loads at run time, each with the packages it imports values from. */
function runtimeGraph(entry: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const visit = (file: string): void => {
    if (graph.has(file)) return;
    const packages: string[] = [];
    graph.set(file, packages);
    for (const match of readFileSync(resolve(SRC, file), 'utf8').matchAll(RUNTIME_IMPORT)) {
      const [, , clause, from] = match as unknown as [string, string, string, string];
      if (typesOnly(clause)) continue;
      if (from.startsWith('.')) visit(relative(SRC, resolve(dirname(resolve(SRC, file)), from.replace(/\.js$/, '.ts'))));
      else packages.push(from);
    }
  };
  visit(entry);
  return graph;
}

describe("the lease thread's modules", () => {
  it('finds a value import of ioredis where there is one, and not in a type-only one (the check itself works)', () => {
    expect(typesOnly('{ type Redis, type Cluster }')).toBe(true);
    expect(typesOnly('{ Cluster, type Redis }')).toBe(false);
    expect(typesOnly('* as IORedis')).toBe(false);
    const graph = runtimeGraph('redis/ioredis.ts');
    expect(graph.get('redis/ioredis.ts')).toEqual(['node:module']);
  });

  /**
   * The thread starts with no Redis module: ioredis and our Redis modules are most of its start-up
   * (docs/benchmarks.md, "Lease thread"); it loads lease-thread-renewal.ts (dynamic import) at its
   * first need.
   */
  it('start without ioredis or any Redis module: the thread itself imports only the protocol and small helpers', () => {
    const graph = runtimeGraph('recovery/lease-thread.ts');
    expect([...graph.keys()].sort()).toEqual(['error-message.ts', 'recovery/lease-thread-protocol.ts', 'recovery/lease-thread.ts']);
    expect(readFileSync(resolve(SRC, 'recovery/lease-thread.ts'), 'utf8')).toContain("import('./lease-thread-renewal.js')");
  });

  /**
   * ioredis is CommonJS: an ESM import of it routes each of its ~66 files through Node's ESM loader,
   * ~55 ms of the thread's start-up CPU (docs/benchmarks.md, "Lease thread"). src/redis/ioredis.ts
   * requires it instead; nothing the thread loads may import it otherwise.
   */
  it('load ioredis only through src/redis/ioredis.ts (require), never with an ESM import of its values', () => {
    const graph = runtimeGraph('recovery/lease-thread-renewal.ts');
    expect(graph.has('redis/connection.ts')).toBe(true);
    expect(graph.has('redis/ioredis.ts')).toBe(true);
    const importers = [...graph].filter(([, packages]) => packages.includes('ioredis')).map(([file]) => file);
    expect(importers).toEqual([]);
  });
});
