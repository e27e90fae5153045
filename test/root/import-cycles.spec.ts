import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve('src');

/** Relative imports and re-exports (type-only ones too: they tie files together just the same). */
const RELATIVE_IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'";]*?\bfrom\s+'(\.{1,2}\/[^']+)'/g;

/** Every `.ts` file under `dir` with the `src/`-relative files it imports. */
function importGraph(dir: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));
  for (const file of files) {
    const path = join(dir, file);
    const text = readFileSync(path, 'utf8');
    const imports = [...text.matchAll(RELATIVE_IMPORT)].map((match) => relative(dir, resolve(dirname(path), (match[1] as string).replace(/\.js$/, '.ts'))));
    graph.set(relative(dir, path), imports);
  }
  return graph;
}

/** Each cycle found by a depth-first walk, as the files along it (first file repeated at the end). */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string): void => {
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      const at = path.indexOf(next);
      if (at >= 0) cycles.push([...path.slice(at), next]);
      else if (!done.has(next)) visit(next);
    }
    path.pop();
    done.add(file);
  };
  for (const file of [...graph.keys()].sort()) if (!done.has(file)) visit(file);
  return cycles;
}

/** The file graph collapsed to top-level folders of src/ (a root file is its own node); imports within a folder drop out. */
function folderGraph(graph: Map<string, string[]>): Map<string, string[]> {
  const folderOf = (file: string): string => file.split(sep)[0] as string;
  const folders = new Map<string, Set<string>>();
  for (const [file, imports] of graph) {
    const from = folderOf(file);
    const targets = folders.get(from) ?? new Set<string>();
    for (const imported of imports) if (folderOf(imported) !== from) targets.add(folderOf(imported));
    folders.set(from, targets);
  }
  return new Map([...folders].map(([folder, targets]) => [folder, [...targets].sort()]));
}

describe('import graph of src/', () => {
  it('finds a cycle where there is one (the check itself works)', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(cyclesOf(graph)).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
  });

  it('finds a folder cycle where files alone have none (the folder check itself works)', () => {
    const graph = new Map([
      [join('a', 'one.ts'), [join('b', 'one.ts')]],
      [join('a', 'two.ts'), []],
      [join('b', 'one.ts'), []],
      [join('b', 'two.ts'), [join('a', 'two.ts'), 'root.ts']],
      ['root.ts', []],
    ]);
    expect(cyclesOf(graph)).toEqual([]);
    expect(cyclesOf(folderGraph(graph))).toEqual([['a', 'b', 'a']]);
  });

  it('reads the real tree: the server and the client files import their parts', () => {
    const graph = importGraph(SRC);
    expect(graph.get(join('server', 'redis-streams.server.ts'))).toContain(join('server', 'entry-handling.ts'));
    expect(graph.get(join('client', 'redis-streams-client.ts'))).toContain(join('client', 'producer-connection.ts'));
  });

  it('loads the dashboard only through its entry point, and the dashboard loads nothing of the CLI', () => {
    const graph = importGraph(SRC);
    const inDashboard = (file: string) => file.startsWith(`dashboard${sep}`);
    const importers = [...graph].filter(([file, imports]) => !inDashboard(file) && imports.some(inDashboard)).map(([file]) => file);
    expect(importers).toEqual([]);
    const dashboardFiles = [...graph].filter(([file]) => inDashboard(file));
    expect(dashboardFiles.length).toBeGreaterThan(5);
    expect(dashboardFiles.flatMap(([, imports]) => imports).filter((file) => file.startsWith(`cli${sep}`))).toEqual([]);
  });

  it('has no import cycle (type-only imports included)', () => {
    expect(cyclesOf(importGraph(SRC)).map((cycle) => cycle.join(' -> '))).toEqual([]);
  });

  it('has no cycle between the top-level folders of src/ (root files count as their own folder)', () => {
    expect(cyclesOf(folderGraph(importGraph(SRC))).map((cycle) => cycle.join(' -> '))).toEqual([]);
  });
});
