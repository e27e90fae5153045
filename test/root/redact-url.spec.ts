import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Redactor } from '../../src/redaction.js';
import { redactUrl, urlSecrets } from '../../src/redis/connection.js';

/** ioredis 6's own URL parser, the one `new Redis(url)` uses. */
const { parseURL } = createRequire(import.meta.url)('ioredis/built/utils/index.js') as {
  parseURL: (url: string) => { username?: string; password?: string; host?: string; port?: string; db?: string };
};

/** What ioredis makes of `url`, `undefined` when it throws (an invalid URL or a malformed %-escape). */
function ioredisReads(url: string): ReturnType<typeof parseURL> | undefined {
  try {
    return parseURL(url);
  } catch {
    return undefined;
  }
}

/** Passwords built from the characters that end or split a URL's parts, and a few letters. */
const passwords = fc.string({ unit: fc.constantFrom('a', 'B', '7', '@', ' ', ':', '%', '4', '0', '/', '?', '#', '!', '"', "'", '\\', '+', '=', '&', '[', ']'), minLength: 1, maxLength: 16 });

describe('passwords in connection URLs', () => {
  it('masks the userinfo password and a ?password= parameter', () => {
    expect(redactUrl('redis://user:s3cret@host:6379/0')).toBe('redis://user:***@host:6379/0');
    expect(redactUrl('rediss://host:6380/?password=s3cret&db=1')).not.toContain('s3cret');
    expect(redactUrl('redis://host:6379')).toBe('redis://host:6379');
  });

  it('masks what cannot be parsed as a URL too', () => {
    expect(redactUrl('redis://u:s3cret@[bad')).not.toContain('s3cret');
  });

  it('lists every secret, raw and decoded, and survives malformed escapes', () => {
    expect(urlSecrets('redis://u:p%40ss@host?password=other').sort()).toEqual(['other', 'p%40ss', 'p@ss']);
    expect(urlSecrets('redis://u:p%E0ss@host')).toEqual(['p%E0ss']);
    expect(urlSecrets('redis://host')).toEqual([]);
  });

  it('masks the whole password, whatever it holds, and lists the one ioredis sends (property)', () => {
    fc.assert(
      fc.property(passwords, fc.constantFrom('redis://user:', 'rediss://:', '//user:', ':'), (password, prefix) => {
        const url = `${prefix}${password}@127.0.0.1:6390/0`;
        expect(redactUrl(url)).toBe(`${prefix}***@127.0.0.1:6390/0`);
        const read = ioredisReads(url);
        if (read === undefined || read.host !== '127.0.0.1' || read.port !== '6390') return; // ioredis cannot read it as a password
        expect(read.password).toBeDefined();
        expect(urlSecrets(url)).toContain(read.password);
        if ((read.password ?? '').length >= 4) expect(new Redactor(urlSecrets(url)).text(`AUTH ${read.password} failed`)).toBe('AUTH *** failed');
      }),
      { numRuns: 2_000 },
    );
  });

  it('agrees with ioredis on where the password ends (the last "@" before the host)', () => {
    for (const [url, password] of [
      ['redis://:hunter2@TAILSECRET@127.0.0.1:6390', 'hunter2@TAILSECRET'],
      ['redis://default:open SPACESECRET@127.0.0.1:6390/0', 'open SPACESECRET'],
      ['redis://u:a:b@127.0.0.1:6390', 'a:b'],
      ['redis://u:p%40%20q@127.0.0.1:6390', 'p@ q'],
      [':a@b@127.0.0.1:6390', 'a@b'],
    ] as const) {
      expect(ioredisReads(url)?.password).toBe(password);
      expect(urlSecrets(url)).toContain(password);
      expect(redactUrl(url)).not.toContain(password.slice(-4));
    }
  });
});
