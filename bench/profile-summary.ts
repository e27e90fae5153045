// Summarizes the .cpuprofile files of a `npm run bench -- --profile` run: for each process, the
// functions with the most self time overall, and our own code (src/) by self and by inclusive time.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function label(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  if (!frame.url) return name;
  const url = frame.url.replace(/^file:\/\//, '');
  const ours = /\/build\/(src\/.*)\.js$/.exec(url);
  const where = ours ? `${ours[1]}.ts (js line ${frame.lineNumber + 1})` : url.replace(/^.*node_modules\//, '').replace(/^node:/, 'node:');
  return `${name}  ${where}`;
}

const isOurs = (frame: CallFrame) => /\/build\/src\//.test(frame.url);

function summarize(file: string, top = Number(process.env.BENCH_PROFILE_TOP ?? 12)): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const idle = new Set(['(idle)', '(program)', '(garbage collector)']);
  const busyUs = [...selfUs.entries()].filter(([id]) => !idle.has(byId.get(id)?.callFrame.functionName ?? '')).reduce((a, [, us]) => a + us, 0);
  const gcUs = [...selfUs.entries()].filter(([id]) => byId.get(id)?.callFrame.functionName === '(garbage collector)').reduce((a, [, us]) => a + us, 0);

  const selfByLabel = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    const key = label(node.callFrame);
    selfByLabel.set(key, (selfByLabel.get(key) ?? 0) + us);
  }
  // Inclusive time of our functions: self time of the subtree, counted once per label per path.
  const inclusiveByLabel = new Map<string, number>();
  const subtree = (id: number): number => {
    const node = byId.get(id)!;
    return (selfUs.get(id) ?? 0) + (node.children ?? []).reduce((sum, child) => sum + subtree(child), 0);
  };
  const memo = new Map<number, number>();
  const inclusive = (id: number) => memo.get(id) ?? (memo.set(id, subtree(id)), memo.get(id)!);
  const walk = (id: number, open: Set<string>): void => {
    const node = byId.get(id)!;
    let next = open;
    if (isOurs(node.callFrame)) {
      const key = label(node.callFrame);
      if (!open.has(key)) {
        inclusiveByLabel.set(key, (inclusiveByLabel.get(key) ?? 0) + inclusive(id));
        next = new Set(open).add(key);
      }
    }
    for (const child of node.children ?? []) walk(child, next);
  };
  const root = profile.nodes[0];
  if (root) walk(root.id, new Set());

  const pct = (us: number) => `${((100 * us) / Math.max(1, busyUs)).toFixed(1).padStart(5)}%`;
  const list = (entries: [string, number][]) =>
    entries.sort((a, b) => b[1] - a[1]).slice(0, top).map(([key, us]) => `    ${pct(us)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`);
  const ours = [...selfByLabel.entries()].filter(([key]) => key.includes('.ts (js line'));
  return [
    `${file}: ${(totalUs / 1e6).toFixed(1)} s sampled, ${(busyUs / 1e6).toFixed(1)} s busy (${pct(gcUs).trim()} GC); % of busy time`,
    '  top self time:',
    ...list([...selfByLabel.entries()].filter(([key]) => !idle.has(key))),
    '  our code (src/), self time:',
    ...list(ours),
    '  our code (src/), inclusive time:',
    ...list([...inclusiveByLabel.entries()]),
  ].join('\n');
}

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node build/bench/profile-summary.js <dir with .cpuprofile files>');
  process.exit(2);
}
for (const name of readdirSync(dir).filter((n) => n.endsWith('.cpuprofile')).sort()) {
  console.log(summarize(join(dir, name)));
  console.log('');
}
