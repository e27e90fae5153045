import { describe, expect, it } from 'vitest';
import { parseAutoclaimReply } from '../../src/claim/xautoclaim-reply.js';
import {
  parseConsumers,
  parseGroups,
  parsePendingEntries,
  parsePendingSummary,
  parseStreamInfo,
} from '../../src/claim/inspection-replies.js';

/** Literal replies: Redis 6.2 shapes cannot be produced here (7.0.15 only), RESP3 maps neither. */
describe('XAUTOCLAIM reply parsing', () => {
  it('Redis 7: cursor, entries, deleted ids', () => {
    const page = parseAutoclaimReply([
      '1700000000002-0',
      [
        ['1700000000000-0', ['a', '1', '__proto__', 'x']],
        ['1700000000001-0', ['b', '2']],
      ],
      ['1699999999999-0'],
    ]);
    expect(page.cursor).toBe('1700000000002-0');
    expect(page.entries.map((e) => e.id)).toEqual(['1700000000000-0', '1700000000001-0']);
    expect(page.entries[0]?.flat).toEqual(['a', '1', '__proto__', 'x']);
    expect(page.deletedIds).toEqual(['1699999999999-0']);
  });

  it('Redis 6.2: a two-element reply has no deleted ids', () => {
    const page = parseAutoclaimReply(['0-0', [['1-0', ['f', 'v']]]]);
    expect(page).toEqual({ cursor: '0-0', entries: [{ id: '1-0', flat: ['f', 'v'] }], deletedIds: [] });
  });

  it('Redis 6.2: nil entries (deleted while pending) are not returned as messages', () => {
    const page = parseAutoclaimReply(['5-0', [['1-0', ['f', 'v']], null, ['3-0', null], ['4-0', ['g', 'w']]]]);
    expect(page.entries.map((e) => e.id)).toEqual(['1-0', '4-0']);
    expect(page.deletedIds).toEqual([]);
    expect(page.cursor).toBe('5-0');
  });

  it('an empty page with a non-final cursor, and Buffer replies', () => {
    expect(parseAutoclaimReply(['9-0', [], []])).toEqual({ cursor: '9-0', entries: [], deletedIds: [] });
    const page = parseAutoclaimReply([Buffer.from('0-0'), [[Buffer.from('1-0'), ['f', 'v']]], [Buffer.from('2-0')]]);
    expect(page.cursor).toBe('0-0');
    expect(page.entries[0]?.id).toBe('1-0');
    expect(page.deletedIds).toEqual(['2-0']);
  });

  it('rejects what is not an XAUTOCLAIM reply', () => {
    expect(() => parseAutoclaimReply(null)).toThrow(/unexpected XAUTOCLAIM reply/);
    expect(() => parseAutoclaimReply(['0-0'])).toThrow(/unexpected XAUTOCLAIM reply/);
    expect(() => parseAutoclaimReply([1, []])).toThrow(/unexpected XAUTOCLAIM reply/);
  });
});

describe('XPENDING and XINFO reply parsing (RESP2 arrays and RESP3 maps)', () => {
  it('XPENDING summary, with and without pending entries, consumers as pairs or a map', () => {
    expect(parsePendingSummary('s', 'g', [3, '1-0', '3-0', [['c1', '2'], ['c2', '1']]])).toEqual({
      key: 's',
      group: 'g',
      count: 3,
      smallest: '1-0',
      largest: '3-0',
      consumers: [
        { name: 'c1', pending: 2 },
        { name: 'c2', pending: 1 },
      ],
    });
    expect(parsePendingSummary('s', 'g', [0, null, null, null])).toMatchObject({
      count: 0,
      smallest: null,
      largest: null,
      consumers: [],
    });
    const map = new Map([['c1', 2]]);
    expect(parsePendingSummary('s', 'g', [2, '1-0', '2-0', map]).consumers).toEqual([{ name: 'c1', pending: 2 }]);
    // A single-consumer list must not be mistaken for one [k, v] pair of a flat map.
    expect(parsePendingSummary('s', 'g', [1, '1-0', '1-0', [['c1', '1']]]).consumers).toEqual([{ name: 'c1', pending: 1 }]);
  });

  it('XPENDING extended rows', () => {
    expect(parsePendingEntries([['1-0', 'c1', 1500, 2], ['2-0', 'c2', '7', '1']])).toEqual([
      { id: '1-0', consumer: 'c1', idleMs: 1500, deliveryCount: 2 },
      { id: '2-0', consumer: 'c2', idleMs: 7, deliveryCount: 1 },
    ]);
  });

  const group7 = ['name', 'g', 'consumers', 2, 'pending', 4, 'last-delivered-id', '5-0', 'entries-read', 5, 'lag', 0];
  it.each([
    ['RESP2 flat array (7.0)', [group7]],
    ['RESP3 Map', [new Map(pairs(group7))]],
    ['RESP3 plain object', [Object.fromEntries(pairs(group7))]],
    ['array of pairs', [pairs(group7)]],
  ])('XINFO GROUPS as %s', (_shape, reply) => {
    expect(parseGroups(reply)).toEqual([
      { name: 'g', consumers: 2, pending: 4, lastDeliveredId: '5-0', entriesRead: 5, lag: 0 },
    ]);
  });

  it('XINFO GROUPS on 6.2 (no entries-read, no lag) and a NULL lag', () => {
    expect(parseGroups([['name', 'g', 'consumers', 0, 'pending', 0, 'last-delivered-id', '0-0']])).toEqual([
      { name: 'g', consumers: 0, pending: 0, lastDeliveredId: '0-0', entriesRead: null, lag: null },
    ]);
    expect(parseGroups([[...group7.slice(0, 10), 'lag', null]])[0]?.lag).toBeNull();
  });

  it('XINFO CONSUMERS before and after 7.2 (inactive)', () => {
    expect(parseConsumers([['name', 'c1', 'pending', 1, 'idle', 10]])).toEqual([
      { name: 'c1', pending: 1, idleMs: 10, inactiveMs: null },
    ]);
    expect(parseConsumers([new Map<string, unknown>([['name', 'c1'], ['pending', 0], ['idle', 3], ['inactive', -1]])])).toEqual([
      { name: 'c1', pending: 0, idleMs: 3, inactiveMs: -1 },
    ]);
  });

  it('XINFO STREAM, with entries and empty', () => {
    const reply = [
      'length', 2, 'radix-tree-keys', 1, 'radix-tree-nodes', 2, 'last-generated-id', '2-0',
      'max-deleted-entry-id', '0-0', 'entries-added', 2, 'recorded-first-entry-id', '1-0', 'groups', 1,
      'first-entry', ['1-0', ['a', '1']], 'last-entry', ['2-0', ['a', '2']],
    ];
    expect(parseStreamInfo('s', reply)).toEqual({
      key: 's',
      length: 2,
      firstEntryId: '1-0',
      lastEntryId: '2-0',
      lastGeneratedId: '2-0',
      groups: 1,
      entriesAdded: 2,
      maxDeletedEntryId: '0-0',
      recordedFirstEntryId: '1-0',
    });
    const empty62 = new Map<string, unknown>([['length', 0], ['last-generated-id', '0-0'], ['groups', 0], ['first-entry', null], ['last-entry', null]]);
    expect(parseStreamInfo('s', empty62)).toMatchObject({ length: 0, firstEntryId: null, lastEntryId: null, entriesAdded: null });
  });
});

function pairs(flat: unknown[]): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([String(flat[i]), flat[i + 1]]);
  return out;
}
