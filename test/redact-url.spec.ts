import { describe, expect, it } from 'vitest';
import { redactUrl, urlSecrets } from '../src/redis/connection.js';

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
});
