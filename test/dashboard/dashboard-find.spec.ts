import { describe, expect, it } from 'vitest';
import type { DeadLetterView } from '../../src/dashboard/dashboard-reads.js';
import { FIND_MAX_MATCHES, FIND_MAX_PREVIEW_BYTES, FIND_MAX_SCANNED, type FindView } from '../../src/dashboard/dashboard-find.js';
import { MAX_READ } from '../../src/dashboard/dashboard-scan.js';
import { HANDLED_STREAM, seedStream } from '../helpers/dashboard-app.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { ADAPTERS, getJson } from '../helpers/dashboard-http.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

type EntryMatch = { id: string; fields: [{ text: string }, { text: string }][] };

describe('dashboard find by content (Express and Fastify)', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  /** Every page of a find, following `next` until null: the pages and the matches in order. */
  async function findAll(params: Record<string, string>): Promise<{ pages: FindView[]; matches: FindView['matches'] }> {
    const pages: FindView[] = [];
    let cursor: string | null | undefined;
    do {
      const reply = await getJson<FindView>(dashboard.app, 'find', { ...params, cursor: cursor ?? undefined });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      pages.push(reply.body);
      cursor = reply.body.next;
      expect(pages.length).toBeLessThan(100);
    } while (cursor !== null);
    return { pages, matches: pages.flatMap((page) => page.matches) };
  }

  /** `count` entries `{"n":…}` with `note` = `hello-n` on `stream` (no group). */
  async function addEntries(stream: string, count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let from = 0; from < count; from += 1000) {
      const pipeline = redis.client.pipeline();
      for (let n = from; n < Math.min(count, from + 1000); n++) pipeline.xadd(stream, '*', 'data', JSON.stringify({ n }), 'note', `hello-${n}`);
      for (const [error, id] of (await pipeline.exec())!) {
        if (error) throw error;
        ids.push(id as string);
      }
    }
    return ids;
  }

  for (const adapter of ADAPTERS) {
    it(`${adapter}: finds by a field's value and by a substring, scanning the whole stream in bounded pages, each match once and in order`, async () => {
      const ids = await addEntries('big', 12_000);
      await dashboard.start({ streams: ['big'] }, adapter);

      const byField = await findAll({ stream: 'big', field: 'note', value: 'hello-7777' });
      expect(byField.matches.map((match) => (match as EntryMatch).id)).toEqual([ids[7777]]);
      expect((byField.matches[0] as EntryMatch).fields.map(([name, value]) => [name.text, value.text])).toEqual([['data', '{"n":7777}'], ['note', 'hello-7777']]);
      // Every entry read once, in pages of at most FIND_MAX_SCANNED (+ one read), each saying how many there are.
      expect(byField.pages.reduce((sum, page) => sum + page.scanned, 0)).toBe(12_000);
      expect(byField.pages.length).toBeGreaterThan(1);
      for (const page of byField.pages) {
        expect(page.total).toBe(12_000);
        expect(page.scanned).toBeLessThanOrEqual(FIND_MAX_SCANNED + MAX_READ);
      }

      // `"n":7` is in n = 7, 70-79 and 700-799 (7000-7999 read `"n":7…` too).
      const expected = ids.filter((_, n) => JSON.stringify({ n }).includes('"n":7'));
      expect(expected).toHaveLength(1 + 10 + 100 + 1000);
      const bySubstring = await findAll({ stream: 'big', contains: '"n":7' });
      expect(bySubstring.matches.map((match) => (match as EntryMatch).id)).toEqual(expected);
      for (const page of bySubstring.pages) expect(page.matches.length).toBeLessThanOrEqual(FIND_MAX_MATCHES);

      // Nothing matches: still every entry read once.
      const none = await findAll({ stream: 'big', field: 'note', value: 'nobody' });
      expect(none.matches).toEqual([]);
      expect(none.pages.reduce((sum, page) => sum + page.scanned, 0)).toBe(12_000);
    }, 60_000);
  }

  it('finds dead letters by their original fields, as the dead-letter list shows them', async () => {
    const deadLetterIds = await seedStream(redis.client, HANDLED_STREAM, { entries: 8, pending: 0, deadLetters: 6 });
    await dashboard.start();
    const found = await findAll({ stream: HANDLED_STREAM, in: 'dead-letters', field: 'note', value: 'hello-3' });
    expect(found.matches.map((letter) => (letter as DeadLetterView).deadLetterId)).toEqual([deadLetterIds[3]]);
    expect(found.pages.at(-1)).toMatchObject({ in: 'dead-letters', total: 6 });
    expect(found.pages.reduce((sum, page) => sum + page.scanned, 0)).toBe(6);
    const letter = found.matches[0] as DeadLetterView;
    expect(letter).toMatchObject({ sourceStream: HANDLED_STREAM, reason: 'manual', error: 'boom' });
    expect(letter.fields.map(([name, value]) => [name.text, value.text])).toContainEqual(['note', 'hello-3']);
    const bySubstring = await findAll({ stream: HANDLED_STREAM, in: 'dead-letters', contains: 'hello-' });
    expect(bySubstring.matches.map((one) => (one as DeadLetterView).deadLetterId)).toEqual(deadLetterIds);
  });

  it("bounds each answer's size: previews cut to 1 KiB a value, and no more than 256 KiB of them a request", async () => {
    // 3 entries of 300 fields of 2 KiB: each one's previews (300 KiB) fill a request on their own.
    for (let n = 0; n < 3; n++) {
      const fields = Array.from({ length: 300 }, (_, i) => [`f${i}`, `needle-${'x'.repeat(2048)}`]).flat();
      await redis.client.xadd('wide', '*', ...fields);
    }
    const app = await dashboard.start({ streams: ['wide'] });
    const first = await getJson<FindView>(app, 'find', { stream: 'wide', contains: 'needle' });
    expect(first.status).toBe(200);
    expect(first.body.matches).toHaveLength(1);
    expect(first.bytes).toBeLessThan(FIND_MAX_PREVIEW_BYTES + 300 * 1024);
    const value = (first.body.matches[0] as EntryMatch).fields[0]![1] as unknown as { text: string; truncated: boolean; bytes: number };
    expect(value).toMatchObject({ truncated: true, bytes: 2055 });
    expect(value.text).toHaveLength(1024);
    const all = await findAll({ stream: 'wide', contains: 'needle' });
    expect(all.pages.map((page) => page.matches.length)).toEqual([1, 1, 1]);
  });

  it('answers 400 naming what is wrong with a find request', async () => {
    const app = await dashboard.start();
    const cases: [Record<string, string>, RegExp][] = [
      [{ stream: 's', field: 'note' }, /value/],
      [{ stream: 's' }, /field/],
      [{ stream: 's', contains: '' }, /contains/],
      [{ stream: 's', contains: 'a', field: 'b', value: 'c' }, /either field and value, or contains/],
      [{ stream: 's', contains: 'a', in: 'everything' }, /in/],
      [{ stream: 's', contains: 'a', cursor: '0-1' }, /cursor/],
    ];
    for (const [params, message] of cases) {
      const reply = await getJson<{ message: string }>(app, 'find', params);
      expect(reply.status, JSON.stringify(params)).toBe(400);
      expect(reply.body.message).toMatch(message);
    }
    // A stream that does not exist: nothing found, nothing to go on with.
    expect((await getJson<FindView>(app, 'find', { stream: 'nothing-here', contains: 'a' })).body).toEqual({ in: 'entries', total: 0, scanned: 0, matches: [], next: null });
  });
});
