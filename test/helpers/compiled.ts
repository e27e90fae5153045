import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Child processes (CLI runs, crash-test workers) run the compiled output in build/. `npm test`
 * compiles first; a spec run alone calls `ensureCompiled()` in its beforeAll, which rebuilds only
 * when some source is newer than its output. A lock directory keeps two spec files (vitest runs
 * them in parallel) from compiling at once.
 */

/** Folders whose .ts (and .lua) files must have fresh outputs under build/. */
const SOURCE_DIRS = ['src', 'test/fixtures', 'test/helpers'];
const LOCK = 'build/.compile-lock';
const LOCK_STALE_MS = 300_000;

/** Path of a compiled file: `test/fixtures/worker.ts` → `build/test/fixtures/worker.js`. */
export function compiledPath(source: string): string {
  return join('build', source.replace(/\.ts$/, '.js'));
}

/** True when every source file has an output at least as new as itself. */
export function buildIsFresh(): boolean {
  for (const dir of SOURCE_DIRS) {
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const source = join(entry.parentPath, entry.name);
      const output = entry.name.endsWith('.ts') ? compiledPath(source) : entry.name.endsWith('.lua') ? join('build', source) : undefined;
      if (output === undefined) continue;
      if (!existsSync(output) || statSync(output).mtimeMs < statSync(source).mtimeMs) return false;
    }
  }
  return true;
}

/** Rebuilds build/ (tsc + .lua copies) when stale. Call from a beforeAll with a long timeout. */
export async function ensureCompiled(): Promise<void> {
  if (buildIsFresh()) return;
  mkdirSync('build', { recursive: true });
  await withLock(() => {
    if (buildIsFresh()) return; // built by another spec file while we waited
    // Other helpers' files may not type-check yet; tsc still emits, so only the output matters.
    spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { stdio: 'ignore' });
    spawnSync('node', ['scripts/copy-assets.mjs', 'build/src'], { stdio: 'inherit' });
  });
}

async function withLock(run: () => void): Promise<void> {
  const deadline = Date.now() + LOCK_STALE_MS;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      const age = existsSync(LOCK) ? Date.now() - statSync(LOCK).mtimeMs : 0;
      if (age > LOCK_STALE_MS || Date.now() > deadline) {
        rmSync(LOCK, { recursive: true, force: true });
        continue;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  try {
    run();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}
