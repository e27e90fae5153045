/**
 * Compares two stream ids (`ms-seq`) numerically. Redis writes both parts without leading zeros,
 * so a longer part is the larger one and equal lengths compare digit by digit.
 */
export function compareStreamIds(a: string, b: string): number {
  // Ids of one read mostly share their length and dash: then text order is numeric order.
  if (a.length === b.length && a.indexOf('-') === b.indexOf('-')) return a < b ? -1 : a > b ? 1 : 0;
  // Digit by digit in place: no substring or BigInt per comparison (batches sort with it).
  const dashA = a.indexOf('-');
  const dashB = b.indexOf('-');
  if (dashA !== dashB) return dashA - dashB;
  for (let i = 0; i < dashA; i++) {
    const diff = a.charCodeAt(i) - b.charCodeAt(i);
    if (diff !== 0) return diff;
  }
  // Same ms part (same length): the longer sequence number is the larger.
  if (a.length !== b.length) return a.length - b.length;
  for (let i = dashA + 1; i < a.length; i++) {
    const diff = a.charCodeAt(i) - b.charCodeAt(i);
    if (diff !== 0) return diff;
  }
  return 0;
}
