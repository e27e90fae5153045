/**
 * Due time, then hold id in byte order: the order of a stream's delayed schedule in Redis (a sorted
 * set: score, then member bytes). Every listing of holds follows it, so that the dashboard, the CLI
 * and the scheduler list ties alike on any host (a locale's collation would not: it puts `a` before
 * `B`, and in Danish `aa` after `z`).
 */
export function inDueOrder(a: { readonly dueMs: number; readonly hold: string }, b: { readonly dueMs: number; readonly hold: string }): number {
  return a.dueMs - b.dueMs || Buffer.compare(Buffer.from(a.hold), Buffer.from(b.hold));
}
