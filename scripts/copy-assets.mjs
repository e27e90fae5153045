// tsc copies no .lua files: mirror src/**/*.lua into the output folder next to the compiled loaders.
// Usage: node scripts/copy-assets.mjs dist        (src/x/y.lua → dist/x/y.lua)
//        node scripts/copy-assets.mjs build/src   (src/x/y.lua → build/src/x/y.lua)
import { cpSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

const out = process.argv[2];
if (!out) throw new Error('usage: copy-assets.mjs <output folder>');
for (const entry of readdirSync('src', { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.lua')) continue;
  const from = join(entry.parentPath, entry.name);
  const to = join(out, relative('src', from));
  cpSync(from, to);
}
