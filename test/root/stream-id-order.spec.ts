import { describe, expect, it } from 'vitest';
import { inStreamOrder } from '../../src/server/batch/batch-gate.js';
import { compareStreamIds } from '../../src/stream-ids.js';

// Batches hand their entries in stream order; a redelivered or claimed entry that joined a batch
// later is sorted in by id, numerically (ids are `ms-seq` without leading zeros).

describe('compareStreamIds / inStreamOrder', () => {
  it('orders by milliseconds, then by sequence, numerically (a longer part is larger)', () => {
    expect(compareStreamIds('1-0', '1-0')).toBe(0);
    expect(compareStreamIds('9-0', '10-0')).toBeLessThan(0);
    expect(compareStreamIds('10-0', '9-0')).toBeGreaterThan(0);
    expect(compareStreamIds('1700000000000-9', '1700000000000-10')).toBeLessThan(0);
    expect(compareStreamIds('1700000000001-0', '1700000000000-99')).toBeGreaterThan(0);
    expect(compareStreamIds('1700000000000-5', '1700000000000-4')).toBeGreaterThan(0);
    expect(compareStreamIds('1700000000000-42', '1700000000000-42')).toBe(0);
    // Same length and dash (the usual pair of one read): text order.
    expect(compareStreamIds('1700000000009-1', '1700000000010-0')).toBeLessThan(0);
    expect(compareStreamIds('1700000000010-0', '1700000000009-1')).toBeGreaterThan(0);
    expect(compareStreamIds('1700000000000-19', '1700000000000-20')).toBeLessThan(0);
  });

  it('leaves entries in order as they are and sorts the rest', () => {
    const inOrder = ['5-0', '5-1', '5-10', '6-0'].map((id) => ({ id }));
    expect(inStreamOrder(inOrder)).toBe(inOrder);
    const late = ['5-10', '5-2', '10-0', '9-99', '5-1'].map((id) => ({ id }));
    expect(inStreamOrder(late).map((entry) => entry.id)).toEqual(['5-1', '5-2', '5-10', '9-99', '10-0']);
  });
});
