import { Controller, Logger } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StreamClaimer } from '../../src/claim/stream-claimer.js';
import { DeadLetterService } from '../../src/recovery/dead-letter.service.js';
import type { RedisStreamsContext } from '../../src/server/context.js';
import { makeIdle } from '../helpers/claim-fixtures.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Property test: random field lists (names and values of random bytes, integer-like names,
 * duplicates, `__proto__`, `constructor`, wire-format names, a value up to 1 MB now and then)
 * pushed through XADD → server (decoded and raw) → claim → dead letter → redrive. Nothing
 * crashes, nothing is lost, raw fields come back byte for byte, undecodable entries are
 * dead-lettered with reason `decode_error`. Bounded: a fixed number of runs and a time limit.
 */
type Pair = [Buffer, Buffer];

const handled = { decoded: new Map<string, unknown>(), bytes: new Map<string, Pair[]>(), map: new Map<string, Record<string, string>>() };

@Controller()
class FuzzController {
  @EventPattern<string>('fz-decoded')
  onDecoded(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    handled.decoded.set(ctx.getId(), data);
  }

  @EventPattern<string>('fz-bytes', { raw: 'buffers' })
  onBytes(@Payload() pairs: Pair[], @Ctx() ctx: RedisStreamsContext): void {
    handled.bytes.set(ctx.getId(), pairs);
  }

  @EventPattern<string>('fz-map', { raw: true })
  onMap(@Payload() fields: Record<string, string>, @Ctx() ctx: RedisStreamsContext): void {
    handled.map.set(ctx.getId(), { ...fields });
  }
}

/** Deterministic bytes of a given size (xorshift32): a 1 MB value without a million generated numbers. */
function noise(size: number, seed: number): Buffer {
  const buffer = Buffer.allocUnsafe(size);
  let x = seed | 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    buffer[i] = x & 0xff;
  }
  return buffer;
}

const bytes = (maxLength: number) => fc.uint8Array({ maxLength }).map((array) => Buffer.from(array));
const fieldName = fc.oneof(
  { weight: 4, arbitrary: bytes(16) },
  { weight: 2, arbitrary: fc.nat(100_000).map((n) => Buffer.from(String(n))) },
  { weight: 2, arbitrary: fc.constantFrom('__proto__', 'constructor', 'data', 'pattern', 'headers', 'id', 'replyTo', 'dlq:stream', '').map((s) => Buffer.from(s)) },
);
const fieldValue = fc.oneof(
  { weight: 4, arbitrary: bytes(64) },
  { weight: 1, arbitrary: fc.json().map((json) => Buffer.from(json)) },
);
/** 1..12 pairs, then 0..3 repeated names, and in about one entry of twelve one value of 100 kB .. 1 MB. */
const entryFields = fc
  .tuple(
    fc.array(fc.tuple(fieldName, fieldValue), { minLength: 1, maxLength: 12 }),
    fc.array(fc.tuple(fc.nat(), fieldValue), { maxLength: 3 }),
    fc.oneof({ weight: 11, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 100_000, max: 1 << 20 }), fc.integer(), fc.nat()) }),
  )
  .map(([pairs, repeats, big]) => {
    const all: Pair[] = [...pairs, ...repeats.map(([index, value]): Pair => [pairs[index % pairs.length]![0], value])];
    if (big !== undefined) all[big[2] % all.length]![1] = noise(big[0], big[1]);
    return all;
  });

/** A failure report that fits a terminal: the seed to replay, the error, and the shape (not the bytes) of the counterexample. */
function shortReport(details: fc.RunDetails<[Pair[]]>): void {
  if (!details.failed) return;
  const example = details.counterexample?.[0];
  const shape = example?.map(([name, value]) => `${JSON.stringify(name.toString('latin1').slice(0, 20))}(${name.length} B)=${value.length} B`).join(', ');
  throw new Error(
    `fuzz property failed (seed ${details.seed}, path "${details.counterexample === null ? '' : details.counterexamplePath}"), fields: ${shape}\n` +
      `${details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)}`,
    { cause: details.errorInstance },
  );
}

const flat = (pairs: readonly Pair[]) => pairs.flat();
const base64Pairs = (pairs: readonly Pair[]) => pairs.map(([name, value]) => [name.toString('base64'), value.toString('base64')]);
/** What a `{ name: value }` map of these fields holds: text, the last duplicate wins. */
function asMap(pairs: readonly Pair[]): Record<string, string> {
  const map = Object.create(null) as Record<string, string>;
  for (const [name, value] of pairs) map[name.toString()] = value.toString();
  return map;
}

describe('fuzz: random field lists through XADD → server → claim → dead letter → redrive', () => {
  const redis = useRedisServer();
  let running: RunningServer;
  let deadLetters: DeadLetterService;

  beforeAll(async () => {
    Logger.overrideLogger(false);
    running = await startServer(
      { connection: redis.server.url, group: 'g', consumer: 'w1', blockMs: 100, recovery: { minIdleTime: 60_000 } },
      [FuzzController],
    );
    deadLetters = new DeadLetterService(redis.client);
    await redis.client.xgroup('CREATE', 'fz-claim', 'g', '$', 'MKSTREAM');
  });
  afterAll(async () => {
    await running?.app.close();
    Logger.overrideLogger(true as never);
  });

  it('nothing crashes, nothing is lost, raw fields round-trip byte for byte', async () => {
    const client = redis.client;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(entryFields, async (pairs) => {
        runs++;
        // Server, decoded: handled, or dead-lettered as undecodable with the exact fields; never both, never neither.
        const decodedId = (await client.xadd('fz-decoded', '*', ...flat(pairs))) as string;
        // Server, raw: byte pairs and the map.
        const bytesId = (await client.xadd('fz-bytes', '*', ...flat(pairs))) as string;
        const mapId = (await client.xadd('fz-map', '*', ...flat(pairs))) as string;
        await waitFor(() => handled.bytes.has(bytesId) && handled.map.has(mapId), 'the raw handlers');
        // Compared as base64 text: vitest's deep equality walks a Buffer byte by byte (seconds for 1 MB).
        const got = handled.bytes.get(bytesId)!;
        expect(got.every(([name, value]) => Buffer.isBuffer(name) && Buffer.isBuffer(value))).toBe(true);
        expect(base64Pairs(got)).toEqual(base64Pairs(pairs));
        expect(handled.map.get(mapId)).toEqual({ ...asMap(pairs) });

        await waitFor(async () => (await pendingCount(client, 'fz-decoded', 'g')) === 0, 'the decoded entry settled');
        const letter = (await deadLetters.list('fz-decoded', { fieldsFormat: 'pairs', encoding: 'base64', count: 10_000 })).deadLetters.find(
          (candidate) => candidate.sourceId === decodedId,
        );
        expect(handled.decoded.has(decodedId) !== (letter !== undefined)).toBe(true);
        if (letter !== undefined) {
          expect(letter).toMatchObject({ reason: 'decode_error', group: 'g', consumer: 'w1' });
          expect(letter.fields).toEqual(base64Pairs(pairs));
          await deadLetters.purge('fz-decoded', [letter.deadLetterId]);
        }

        // Claim (exact form) → dead letter → inspect → redrive.
        const claimId = (await client.xadd('fz-claim', '*', ...flat(pairs))) as string;
        await client.xreadgroup('GROUP', 'g', 'crashed', 'COUNT', 1, 'STREAMS', 'fz-claim', '>');
        await makeIdle(client, 'fz-claim', 'g', 'crashed', [claimId]);
        const claimed = await new StreamClaimer(client).claim({
          key: 'fz-claim', group: 'g', consumer: 'rescuer', minIdleTime: 'PT1M', fieldsFormat: 'pairs', encoding: 'base64',
        });
        expect(claimed.messages).toEqual([{ stream: 'fz-claim', id: claimId, fields: base64Pairs(pairs) }]);
        const moved = await deadLetters.moveToDeadLetter({ stream: 'fz-claim', group: 'g', ids: [claimId], reason: 'manual', error: 'fuzz' });
        expect(moved.outcomes.map((o) => o.status)).toEqual(['moved']);
        const deadId = moved.outcomes[0]!.deadLetterId!;
        const inspected = await deadLetters.inspect('fz-claim', deadId, { fieldsFormat: 'pairs', encoding: 'base64' });
        expect(inspected?.fields).toEqual(base64Pairs(pairs));
        const redriven = await deadLetters.redrive('fz-claim', [deadId]);
        expect(redriven.skipped).toEqual([]);
        const [row] = (await client.callBuffer('XRANGE', 'fz-claim', redriven.redriven[0]!.newId, redriven.redriven[0]!.newId)) as [Buffer, Buffer[]][];
        expect(row![1].slice(0, 2 * pairs.length).map((part) => part.toString('base64'))).toEqual(flat(pairs).map((part) => part.toString('base64')));
        expect(row![1].length).toBe(2 * pairs.length + 10); // the five history fields
        // The redriven copy is not read here: the next run starts from a clean group.
        await client.call('XGROUP', 'SETID', 'fz-claim', 'g', '$');
      }),
      // FUZZ_SEED=<seed> replays a failure's runs (the report gives the seed).
      { numRuns: 30, interruptAfterTimeLimit: 10_000, reporter: shortReport, seed: process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED) },
    );
    expect(runs).toBeGreaterThanOrEqual(10);
    expect(await pendingCount(client, 'fz-bytes', 'g')).toBe(0);
    expect(await pendingCount(client, 'fz-map', 'g')).toBe(0);
  }, 60_000);
});
