import { compareStreamIds } from '../stream-ids.js';
/**
 * Pages read from several partitions, merged into one page in id order. Each partition's page is
 * in id order already; ids of different partitions are comparable (the same clock) but may be
 * equal, so a page is never cut between equal ids: the next page starts after the last id
 * (exclusive) and would skip the rest of a tie.
 */
export function mergeById<T>(pages: readonly (readonly T[])[], idOf: (item: T) => string, count: number): { items: T[]; more: boolean } {
  const all = pages.flat().sort((a, b) => compareStreamIds(idOf(a), idOf(b)));
  let end = Math.min(count, all.length);
  while (end > 0 && end < all.length && idOf(all[end]!) === idOf(all[end - 1]!)) end++;
  // More may follow when any partition filled its page, or when this page left items out.
  const more = end < all.length || pages.some((page) => page.length >= count);
  return { items: all.slice(0, end), more };
}

