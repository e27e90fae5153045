import { readFileSync } from 'node:fs';

/**
 * The package's version, read from its package.json: two folders up from dist/cli/ in the
 * published package, three from build/src/cli/ in a checkout. Read at `--version` only.
 */
export function packageVersion(): string {
  for (const relative of ['../../package.json', '../../../package.json']) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'nestjs-redis-streams' && manifest.version) return manifest.version;
    } catch {
      // not this folder
    }
  }
  return 'unknown';
}
