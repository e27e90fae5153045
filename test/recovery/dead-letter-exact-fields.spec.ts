import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeadLetterService } from '../../src/recovery/dead-letter.service.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { runCli } from '../helpers/run-cli.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

const STREAM = 'exact';
const GROUP = 'g';
/** Bytes that are not UTF-8 (a lone 0xff, a NUL, a lone continuation byte). */
const BINARY = Buffer.from([0xff, 0x00, 0x80, 0x41]);
/** As XADD stored them: integer-like names after others, a duplicate name, a name like a header field, binary bytes in a name and a value. */
const STORED: [string | Buffer, string | Buffer][] = [
  ['b', 'first'],
  ['10', 'ten'],
  ['2', 'two'],
  ['a', 'x'],
  ['a', 'y'],
  ['dlq:stream', 'not-the-header'],
  [BINARY, 'binary name'],
  ['bin', BINARY],
];
const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64');
const storedBase64 = () => STORED.map(([name, value]) => [b64(name), b64(value)]);

/** An entry's flat fields as Buffers (XRANGE through the Buffer variant). */
async function rawFields(client: ReturnType<typeof useRedisServer>['client'], key: string, id: string): Promise<Buffer[]> {
  const rows = (await client.callBuffer('XRANGE', key, id, id)) as [Buffer, Buffer[]][];
  return rows[0]![1];
}

describe('dead letters are byte-exact: list, inspect, redrive and the dlq CLI keep order, duplicates and bytes', () => {
  const redis = useRedisServer();
  let service: DeadLetterService;
  let sourceId: string;
  let deadId: string;

  beforeAll(() => {
    service = new DeadLetterService(redis.client);
  });
  beforeEach(async () => {
    const client = redis.client;
    await client.flushall();
    sourceId = (await client.xadd(STREAM, '*', ...STORED.flat())) as string;
    await client.xgroup('CREATE', STREAM, GROUP, '0');
    await client.xreadgroup('GROUP', GROUP, 'c1', 'STREAMS', STREAM, '>');
    const moved = await service.moveToDeadLetter({ stream: STREAM, group: GROUP, ids: [sourceId], reason: 'manual' });
    deadId = moved.outcomes[0]!.deadLetterId!;
  });

  it('the dead-letter script stores the original fields verbatim after its header', async () => {
    const flat = await rawFields(redis.client, service.deadLetterKeyFor(STREAM), deadId);
    expect(flat.slice(18)).toEqual(STORED.flat().map((part) => Buffer.from(part)));
  });

  it('list and inspect with pairs + base64: every field in stream order, duplicates kept, bytes exact', async () => {
    const page = await service.list(STREAM, { fieldsFormat: 'pairs', encoding: 'base64' });
    expect(page.deadLetters.map((letter) => letter.fields)).toEqual([storedBase64()]);
    expect(page.deadLetters[0]).toMatchObject({ deadLetterId: deadId, sourceId, reason: 'manual', sourceStream: STREAM });
    const letter = await service.inspect(STREAM, deadId, { fieldsFormat: 'pairs', encoding: 'base64' });
    expect(letter?.fields).toEqual(storedBase64());
    const [, value] = letter!.fields.at(-1)!;
    expect(Buffer.from(value, 'base64').equals(BINARY)).toBe(true);
  });

  it('pairs + utf8 keep order and duplicates as text; the default object form is as documented', async () => {
    const pairs = await service.inspect(STREAM, deadId, { fieldsFormat: 'pairs' });
    expect(pairs?.fields).toEqual(STORED.map(([name, value]) => [name.toString(), value.toString()]));
    const object = await service.inspect(STREAM, deadId);
    expect(Object.entries(object!.fields)).toEqual([
      ['2', 'two'],
      ['10', 'ten'],
      ['b', 'first'],
      ['a', 'y'],
      ['dlq:stream', 'not-the-header'],
      [BINARY.toString(), 'binary name'],
      ['bin', BINARY.toString()],
    ]);
  });

  it('a redriven entry carries the original fields byte for byte (order, duplicates, binary), then the history', async () => {
    const result = await service.redrive(STREAM, [deadId]);
    expect(result.skipped).toEqual([]);
    const flat = await rawFields(redis.client, STREAM, result.redriven[0]!.newId);
    const original = STORED.flat().map((part) => Buffer.from(part));
    expect(flat.slice(0, original.length)).toEqual(original);
    expect(flat.slice(original.length).filter((_, i) => i % 2 === 0).map(String)).toEqual([
      'dlq:redriven-from',
      'dlq:previous-id',
      'dlq:previous-deliveries',
      'dlq:previous-reason',
      'dlq:redrives',
    ]);
  });

  it('rejects an unknown fieldsFormat or encoding, naming it', async () => {
    await expect(service.list(STREAM, { fieldsFormat: 'map' as 'pairs' })).rejects.toMatchObject({ name: 'RedisStreamsOptionError', option: 'fieldsFormat' });
    await expect(service.inspect(STREAM, deadId, { encoding: 'hex' as 'utf8' })).rejects.toMatchObject({ name: 'RedisStreamsOptionError', option: 'encoding' });
  });

  describe('CLI dlq list / inspect --fields-format pairs --encoding base64', () => {
    beforeAll(ensureCompiled, 300_000);

    it('prints the fields in stream order with exact bytes', async () => {
      const url = ['--url', redis.server.url];
      const list = await runCli(['dlq', 'list', STREAM, '--fields-format', 'pairs', '--encoding', 'base64', ...url]);
      expect(list.stderr).toBe('');
      expect(list.code).toBe(0);
      expect((JSON.parse(list.stdout) as { deadLetters: { fields: unknown }[] }).deadLetters.map((d) => d.fields)).toEqual([storedBase64()]);

      const inspect = await runCli(['dlq', 'inspect', STREAM, deadId, '--fields-format', 'pairs', '--encoding', 'base64', ...url]);
      expect(inspect.stderr).toBe('');
      expect(inspect.code).toBe(0);
      expect((JSON.parse(inspect.stdout) as { fields: unknown }).fields).toEqual(storedBase64());
    }, 60_000);

    it('a bad --encoding is a usage error naming the option', async () => {
      const run = await runCli(['dlq', 'list', STREAM, '--encoding', 'hex', '--url', redis.server.url]);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/encoding/);
    });
  });
});
