import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';

interface PackResult {
  files: { path: string }[];
}

/** What `npm pack` would publish (its prepack builds dist/ first). */
describe('npm pack contents', () => {
  let paths: string[];
  const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as { bin: Record<string, string>; main: string; types: string; exports: Record<string, Record<string, string>> };

  beforeAll(() => {
    const pack = spawnSync('npm', ['pack', '--dry-run', '--json'], { encoding: 'utf8', timeout: 280_000 });
    expect(pack.status, pack.stderr).toBe(0);
    // prepack's build output precedes the JSON on stdout.
    const [result] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('[\n'))) as PackResult[];
    paths = result!.files.map((file) => file.path).sort();
  }, 300_000);

  it('holds the entry points, the CLI, the Lua scripts, LICENSE and the README', () => {
    const bins = Object.values(manifest.bin).map((path) => path.replace(/^\.\//, ''));
    for (const path of ['package.json', 'README.md', 'LICENSE', manifest.main.replace(/^\.\//, ''), manifest.types.replace(/^\.\//, ''), ...bins]) {
      expect(paths).toContain(path);
    }
    const lua = readdirSync('src', { recursive: true, encoding: 'utf8' }).filter((path) => path.endsWith('.lua')).map((path) => `dist/${path}`);
    expect(lua.length).toBeGreaterThan(0);
    for (const path of lua) expect(paths).toContain(path);
  });

  it('holds every entry point of "exports" and the dashboard page its code reads at run time', () => {
    const exported = Object.values(manifest.exports).flatMap((entry) => Object.values(entry)).map((path) => path.replace(/^\.\//, ''));
    expect(exported).toContain('dist/dashboard/index.js');
    for (const path of exported) expect(paths).toContain(path);
    const assets = readdirSync('src/dashboard/assets').map((name) => `dist/dashboard/assets/${name}`);
    expect(assets).toEqual(expect.arrayContaining(['dist/dashboard/assets/index.html', 'dist/dashboard/assets/dashboard.js', 'dist/dashboard/assets/dashboard.css']));
    for (const path of assets) expect(paths).toContain(path);
  });

  it('holds every docs/*.md page the README links to', () => {
    const linked = [...readFileSync('README.md', 'utf8').matchAll(/\]\((docs\/[^)#]+\.md)(#[^)]*)?\)/g)].map((match) => match[1]!);
    expect(new Set(linked).size).toBeGreaterThanOrEqual(7);
    for (const path of linked) expect(paths).toContain(path);
  });

  it('holds no tests, bench, sample, sources, source maps or secrets', () => {
    const unwanted = paths.filter((path) =>
      /^(test|bench|sample|scripts|src|\.ci|node_modules|build)\//.test(path) ||
      path.endsWith(".map") ||
      /(^|\/)\.env(\.|$)|\.(pem|key|p12|crt)$|(^|\/)\.npmrc$/.test(path) ||
      /\.spec\.|\.test\./.test(path),
    );
    expect(unwanted).toEqual([]);
    expect(paths.every((path) => /^(dist\/|docs\/[^/]+\.md$|package\.json$|README\.md$|LICENSE$)/.test(path))).toBe(true);
  });
});
