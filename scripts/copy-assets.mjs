// tsc copies no non-TS files: mirror src/**/*.lua and the dashboard's page (src/dashboard/assets/)
// into the output folder next to the compiled code that reads them.
// Usage: node scripts/copy-assets.mjs dist        (src/x/y.lua → dist/x/y.lua)
//        node scripts/copy-assets.mjs build/src   (src/x/y.lua → build/src/x/y.lua)
import { cpSync, readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

const out = process.argv[2];
if (!out) throw new Error('usage: copy-assets.mjs <output folder>');
const DASHBOARD_ASSETS = join('src', 'dashboard', 'assets') + sep;
for (const entry of readdirSync('src', { recursive: true, withFileTypes: true })) {
  if (!entry.isFile()) continue;
  const from = join(entry.parentPath, entry.name);
  if (!entry.name.endsWith('.lua') && !from.startsWith(DASHBOARD_ASSETS)) continue;
  const to = join(out, relative('src', from));
  cpSync(from, to);
}
