import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { StreamClaimer } from '../../src/claim/stream-claimer.js';
import { deliver, makeIdle } from '../helpers/claim-fixtures.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { runCli } from '../helpers/run-cli.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/** Bytes that are not UTF-8 (a lone 0xff, a NUL, a lone continuation byte). */
const BINARY = Buffer.from([0xff, 0x00, 0x80, 0x41]);
/** The entry's fields as XADD stored them: integer-like names after others, a duplicate name, binary bytes. */
const STORED: [string | Buffer, string | Buffer][] = [
  ['b', 'first'],
  ['10', 'ten'],
  ['2', 'two'],
  ['a', 'x'],
  ['a', 'y'],
  ['bin', BINARY],
];
const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64');

describe('claim output is byte-exact: stream order, duplicates and binary values (fieldsFormat, encoding)', () => {
  const redis = useRedisServer();
  let id: string;
  const key = 'exact';

  beforeEach(async () => {
    const client = redis.client;
    await client.del(key);
    id = (await client.xadd(key, '*', ...STORED.flat())) as string;
    await client.xgroup('CREATE', key, 'g', '0');
    await deliver(client, key, 'g', 'crashed');
    await makeIdle(client, key, 'g', 'crashed', [id]);
  });

  const claim = (options: object) =>
    new StreamClaimer(redis.client).claim({ key, group: 'g', consumer: 'r', minIdleTime: 'PT10M', ...options });

  it('pairs + base64: every field in stream order, the duplicate kept, the bytes exact', async () => {
    const result = await claim({ fieldsFormat: 'pairs', encoding: 'base64' });
    const fields = result.messages[0]!.fields as unknown as [string, string][];
    expect(fields).toEqual(STORED.map(([name, value]) => [b64(name), b64(value)]));
    expect(Buffer.from(fields[5]![1], 'base64').equals(BINARY)).toBe(true);
  });

  it('pairs + utf8: stream order and duplicates, text values', async () => {
    const result = await claim({ fieldsFormat: 'pairs' });
    expect(result.messages[0]!.fields).toEqual([...STORED.slice(0, 5), ['bin', BINARY.toString('utf8')]]);
  });

  it('the default object form: integer-like names first, the last duplicate wins (as documented)', async () => {
    const result = await claim({});
    const fields = result.messages[0]!.fields;
    expect(Object.entries(fields)).toEqual([
      ['2', 'two'],
      ['10', 'ten'],
      ['b', 'first'],
      ['a', 'y'],
      ['bin', BINARY.toString('utf8')],
    ]);
  });

  it('STORE files carry the same form', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nrs-exact-'));
    try {
      const result = await new StreamClaimer(redis.client, { storeDirectory: dir }).claim({
        key,
        group: 'g',
        consumer: 'r',
        minIdleTime: 'PT10M',
        fetchType: 'STORE',
        fieldsFormat: 'pairs',
        encoding: 'base64',
      });
      const line = JSON.parse(readFileSync(fileURLToPath(result.uri), 'utf8').trim()) as { id: string; fields: [string, string][] };
      expect(line).toEqual({ stream: key, id, fields: STORED.map(([name, value]) => [b64(name), b64(value)]) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects an unknown fieldsFormat or encoding, naming it', async () => {
    await expect(claim({ fieldsFormat: 'map' })).rejects.toMatchObject({ name: 'RedisStreamsOptionError', option: 'fieldsFormat' });
    await expect(claim({ encoding: 'hex' })).rejects.toMatchObject({ name: 'RedisStreamsOptionError', option: 'encoding' });
  });

  describe('CLI claim --fields-format pairs --encoding base64', () => {
    beforeAll(ensureCompiled, 300_000);
    afterAll(() => undefined);

    it('prints the fields in stream order with exact bytes', async () => {
      const output = await runCli(['claim', key, 'g', 'r', '--min-idle-time', 'PT10M', '--fields-format', 'pairs', '--encoding', 'base64', '--url', redis.server.url]);
      expect(output.stderr).toBe('');
      expect(output.code).toBe(0);
      const result = JSON.parse(output.stdout) as { messages: { fields: [string, string][] }[] };
      expect(result.messages[0]!.fields).toEqual(STORED.map(([name, value]) => [b64(name), b64(value)]));
    });
  });
});
