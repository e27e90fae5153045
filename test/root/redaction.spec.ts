import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { connectionSecrets, redactCommandArgs, redactUrl, Redactor } from '../../src/redaction.js';

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

  // ioredis 6 (utils parseURL → WHATWG URL): the userinfo ends at the LAST "@" before the host, the
  // password is what follows its first ":". A raw "/", "?" or "#" ends ioredis' authority early (it
  // then rejects the URL or reads the rest as a path): still a password to whoever wrote it.
  it.each([
    ['redis://:hunter2@TAILSECRET@127.0.0.1:6390', 'redis://:***@127.0.0.1:6390'],
    ['rediss://:a@b@TAILSECRET@[::1]:6390/1', 'rediss://:***@[::1]:6390/1'],
    ['redis://default:open SPACESECRET@127.0.0.1:6390/0', 'redis://default:***@127.0.0.1:6390/0'],
    ['redis://default:a:b:COLONSECRET@host', 'redis://default:***@host'],
    ['redis://default:pa/SLASHSECRET@host:1', 'redis://default:***@host:1'],
    ['redis://default:12/SLASHSECRET@host:1', 'redis://default:***@host:1'],
    ['redis://default:pa#HASHSECRET@host:1', 'redis://default:***@host:1'],
    ['redis://default:pa?QUERYSECRET@host:1', 'redis://default:***@host:1'],
    ['redis://default:pa%40%20PCTSECRET@host', 'redis://default:***@host'],
    ['redis://default:tab\tTABSECRET@host', 'redis://default:***@host'],
    ['REDIS://:UPPER SECRET@host', 'REDIS://:***@host'],
    [':hunter2@TAILSECRET@127.0.0.1:6390', ':***@127.0.0.1:6390'],
    ['user:open SPACESECRET@127.0.0.1:6390', 'user:***@127.0.0.1:6390'],
    ['//user:a@TAILSECRET@127.0.0.1:6390', '//user:***@127.0.0.1:6390'],
    ['redis://:pw@TAILSECRET@host/0?password=q@UERY SECRET', 'redis://:***@host/0?password=***'],
    ['redis+sentinel://:a@TAILSECRET@h1:26379,h2/mymaster?sentinelPassword=s@SENTINEL', 'redis+sentinel://:***@h1:26379,h2/mymaster?sentinelPassword=***'],
    ['redis://user@host:6390', 'redis://user@host:6390'],
    ['unix:///run/redis.sock', 'unix:///run/redis.sock'],
  ])('as ioredis reads it: %s', (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });

  it('lists the password as ioredis sends it and as written, for the known-secret pass', () => {
    expect(connectionSecrets('redis://:hunter2@TAILSECRET@127.0.0.1:1')).toContain('hunter2@TAILSECRET');
    expect(connectionSecrets('redis://default:open SPACESECRET@127.0.0.1:1')).toContain('open SPACESECRET');
    expect(connectionSecrets(':hunter2@TAILSECRET@127.0.0.1:1')).toContain('hunter2@TAILSECRET');
    expect(connectionSecrets('redis://u:pa%40%20PCT@host').sort()).toEqual(['pa%40%20PCT', 'pa@ PCT'].sort());
    // ioredis rejects it (a raw "/"), but it was meant as a password: masked wherever it appears.
    expect(connectionSecrets('redis://u:pa/SLASHSECRET@host')).toContain('pa/SLASHSECRET');
    expect(connectionSecrets('redis+sentinel://:a@TAILSECRET@h1/mymaster?sentinelPassword=s%40SENTINEL')).toEqual(
      expect.arrayContaining(['a@TAILSECRET', 's@SENTINEL']),
    );
    const redactor = Redactor.for('redis://default:open SPACESECRET@127.0.0.1:1');
    expect(redactor.text('WRONGPASS for "open SPACESECRET", url redis://default:open SPACESECRET@127.0.0.1:1')).not.toContain('SPACESECRET');
    expect(Redactor.for('redis://:hunter2@TAILSECRET@h:1').text('AUTH hunter2@TAILSECRET failed')).toBe('AUTH *** failed');
  });

  it('masks free text up to the last "@" of a URL (no secret known)', () => {
    const redactor = new Redactor();
    expect(redactor.text('cannot connect to redis://:hunter2@TAILSECRET@127.0.0.1:1: connection refused')).toBe(
      'cannot connect to redis://:***@127.0.0.1:1: connection refused',
    );
    expect(redactor.text('got ":hunter2@TAILSECRET@127.0.0.1:1"')).toBe('got ":***@127.0.0.1:1"');
    expect(redactor.text('{"a":"redis://:pw12@h:1","b":"c@d"}')).toBe('{"a":"redis://:***@h:1","b":"c@d"}');
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
