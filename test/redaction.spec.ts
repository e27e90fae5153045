import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { connectionSecrets, redactCommandArgs, redactUrl, Redactor } from '../src/redaction.js';

const SECRET = 'Wr0ng:P@ss/wörd';

describe('redaction: URLs in every form ioredis accepts', () => {
  it.each([
    ['redis://default:s3cr3tPW@127.0.0.1:6390', 'redis://default:***@127.0.0.1:6390'],
    ['rediss://:s3cr3tPW@host:6390/2', 'rediss://:***@host:6390/2'],
    [':s3cr3tPW@127.0.0.1:6390', ':***@127.0.0.1:6390'],
    ['user:s3cr3tPW@127.0.0.1:6390', 'user:***@127.0.0.1:6390'],
    ['//user:s3cr3tPW@127.0.0.1:6390', '//user:***@127.0.0.1:6390'],
    ['redis://127.0.0.1:6390/?password=s3cr3tPW&db=1', 'redis://127.0.0.1:6390/?password=***&db=1'],
    ['127.0.0.1:6390?password=s3cr3tPW', '127.0.0.1:6390?password=***'],
    ['redis://u:s3cr3t%40PW@host', 'redis://u:***@host'],
    ['redis://127.0.0.1:6390', 'redis://127.0.0.1:6390'],
  ])('%s', (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });

  it('finds the secrets of URLs, options and clients, raw and decoded', () => {
    expect(connectionSecrets(':s3cr3t%40PW@127.0.0.1:1').sort()).toEqual(['s3cr3t%40PW', 's3cr3t@PW']);
    expect(connectionSecrets('user:pw1234@host')).toEqual(['pw1234']);
    expect(connectionSecrets({ host: 'h', password: 'pw1234', sentinelPassword: 'spw12345' }).sort()).toEqual(['pw1234', 'spw12345']);
    expect(connectionSecrets({ options: { redisOptions: { password: 'cluster-pw' } } })).toEqual(['cluster-pw']);
    expect(connectionSecrets('redis://host')).toEqual([]);
  });
});

describe('redaction: command arguments', () => {
  it.each([
    ['auth', ['only-pw'], ['***']],
    ['auth', ['user', 'pw'], ['user', '***']],
    ['hello', ['3', 'AUTH', 'default', 'pw', 'SETNAME', 'x'], ['3', 'AUTH', 'default', '***', 'SETNAME', 'x']],
    ['migrate', ['h', '1', '', '0', '5000', 'AUTH', 'pw', 'KEYS', 'a'], ['h', '1', '', '0', '5000', 'AUTH', '***', 'KEYS', 'a']],
    ['migrate', ['h', '1', 'k', '0', '5000', 'AUTH2', 'u', 'pw'], ['h', '1', 'k', '0', '5000', 'AUTH2', 'u', '***']],
    ['config', ['SET', 'requirepass', 'pw', 'maxmemory', '1mb', 'masterauth', 'pw2'], ['SET', 'requirepass', '***', 'maxmemory', '1mb', 'masterauth', '***']],
    ['acl', ['SETUSER', 'bob', 'on', '>pw', '#abc', '~keys:*', '+@all'], ['SETUSER', 'bob', 'on', '>***', '#***', '~keys:*', '+@all']],
    ['xadd', ['orders', '*', 'password', 'kept'], ['orders', '*', 'password', 'kept']],
  ])('%s %j', (name, args, expected) => {
    expect(redactCommandArgs(name, args)).toEqual(expected);
  });
});

describe('redaction: errors', () => {
  it('cleans an ioredis-like ReplyError in place: message, stack, command, cause chain, own properties', () => {
    class ReplyError extends Error {
      override name = 'ReplyError';
    }
    const root = new Error(`connect failed for redis://default:${encodeURIComponent(SECRET)}@h:1`);
    const error = new ReplyError('WRONGPASS invalid username-password pair', { cause: root });
    Object.assign(error, {
      command: { name: 'hello', args: ['3', 'AUTH', 'default', SECRET] },
      lastNodeError: new Error(`password: '${SECRET}'`),
      options: { password: SECRET },
    });
    const cleaned = new Redactor([SECRET]).error(error);
    expect(cleaned).toBe(error);
    expect(cleaned).toBeInstanceOf(ReplyError);
    expect((cleaned as unknown as { command: unknown }).command).toEqual({ name: 'hello', args: ['3', 'AUTH', 'default', '***'] });
    for (const printed of [inspect(cleaned, { depth: Infinity, showHidden: true }), JSON.stringify(cleaned), cleaned.stack ?? '']) {
      expect(printed).not.toContain('Wr0ng');
    }
  });

  it('masks a secret in its raw, percent-encoded and JSON-escaped forms; short secrets only through patterns', () => {
    const redactor = new Redactor(['pa"ss word']);
    expect(redactor.text('a pa"ss word b pa%22ss%20word c "pa\\"ss word"')).toBe('a *** b *** c "***"');
    expect(new Redactor(['ab']).text('tab :ab@host')).toBe('tab :***@host');
  });

  it('copies event payloads with their strings cleaned, leaving other values alone', () => {
    const payload = { reason: `failed on user:${SECRET.replace('/', '')}@127.0.0.1:1`, count: 2, ids: ['1-0'] };
    const cleaned = Redactor.for('redis://u:pw12345@h').value(payload);
    expect(cleaned.reason).not.toContain('Wr0ng');
    expect(cleaned).toMatchObject({ count: 2, ids: ['1-0'] });
  });
});
