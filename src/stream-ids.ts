/**
 * Compares two stream ids (`ms-seq`) numerically. Redis writes both parts without leading zeros,
 * so a longer part is the larger one and equal lengths compare digit by digit.
 */
export function compareStreamIds(a: string, b: string): number {
  const dashA = a.indexOf('-');
  const dashB = b.indexOf('-');
  if (dashA !== dashB) return dashA - dashB;
  // Parts of equal lengths (the usual pair of one read): text order is numeric order, one native comparison.
  if (a.length === b.length) return a < b ? -1 : a > b ? 1 : 0;
  // Same ms length, different sequence lengths: the ms part digit by digit, then the longer sequence is the larger.
  for (let i = 0; i < dashA; i++) {
    const diff = a.charCodeAt(i) - b.charCodeAt(i);
    if (diff !== 0) return diff;
  }
  return a.length - b.length;
}
