import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsModule } from '../../src/module/redis-streams.module.js';
import { describeConnection, openConnection, type RedisConnection } from '../../src/redis/connection.js';
import { sentinelUrlOptions } from '../../src/redis/sentinel-connection.js';
import { redactUrl, urlSecrets } from '../../src/redaction.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';

type Build = (connection: unknown) => unknown;
const BUILDERS: [string, Build][] = [
  ['server', (connection) => new RedisStreamsServer({ connection: connection as RedisConnection, group: 'g' })],
  ['client', (connection) => new RedisStreamsClient({ connection: connection as RedisConnection })],
  ['module', (connection) => RedisStreamsModule.forRoot({ connection: connection as RedisConnection })],
];

function optionError(build: () => unknown): { option?: string; message?: string; name?: string } {
  try {
    build();
  } catch (error) {
    return error as Error & { option: string };
  }
  return {};
}

describe('the Sentinel URL: redis+sentinel://[[user]:password@]host[:port],…/primaryName[/db]', () => {
  const parse = (url: string) => sentinelUrlOptions('connection', url, 'no keyPrefix');

  it('hosts are sentinels (26379 by default), the path names the primary and the database', () => {
    expect(parse('redis+sentinel://10.0.0.1:26380,10.0.0.2,[::1]:26381/mymaster')).toEqual({
      sentinels: [
        { host: '10.0.0.1', port: 26380 },
        { host: '10.0.0.2', port: 26379 },
        { host: '::1', port: 26381 },
      ],
      name: 'mymaster',
    });
    expect(parse('redis+sentinel://h:1/my%20master/3')).toMatchObject({ name: 'my master', db: 3 });
  });

  it('the user and password are the data nodes\'; sentinelUsername / sentinelPassword in the query are the sentinels\'', () => {
    expect(parse('redis+sentinel://app:p%40ss@h:1,h:2/m?sentinelUsername=watch&sentinelPassword=s%26pw')).toEqual({
      sentinels: [
        { host: 'h', port: 1 },
        { host: 'h', port: 2 },
      ],
      name: 'm',
      username: 'app',
      password: 'p@ss',
      sentinelUsername: 'watch',
      sentinelPassword: 's&pw',
    });
    expect(parse('redis+sentinel://:pw@h/m')).toEqual({ sentinels: [{ host: 'h', port: 26379 }], name: 'm', password: 'pw' });
  });

  it('rediss+sentinel:// is TLS to the sentinels and to the primary (ioredis needs enableTLSForSentinelMode for the latter)', () => {
    expect(parse('rediss+sentinel://h:1/m')).toMatchObject({ tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true });
    expect(parse('redis+sentinel://h:1/m')).not.toHaveProperty('tls');
  });

  it.each([
    ['redis+sentinel://h:1', 'names no primary'],
    ['redis+sentinel://h:1/', 'names no primary'],
    ['redis+sentinel:///m', 'names no sentinel'],
    ['redis+sentinel://h:1,/m', 'is not a sentinel address'],
    ['redis+sentinel://h:99999/m', 'has no valid port'],
    ['redis+sentinel://h:1/m/x', 'database must be a number'],
    ['redis+sentinel://h:1/m/0/extra', 'more than /primaryName/db'],
    ['redis+sentinel://h:1/m?role=slave', 'not "role"'],
    ['redis+sentinel://h:1/m#x', 'no #fragment'],
    ['redis+sentinel://app@h:1/m', 'needs a password'],
  ])('%s is a RedisStreamsOptionError naming the option: %s', (url, why) => {
    for (const [, build] of BUILDERS) {
      const error = optionError(() => build(url));
      expect(error).toMatchObject({ name: 'RedisStreamsOptionError', option: 'connection' });
      expect(error.message).toContain(why);
    }
  });

  it('a keyPrefix in the query is refused as everywhere; a password never appears in the error', () => {
    for (const [, build] of BUILDERS) {
      expect(optionError(() => build('redis+sentinel://:s3cretPW@h:1/m?keyPrefix=app:'))).toMatchObject({ option: 'connection.keyPrefix' });
      const error = optionError(() => build('redis+sentinel://:s3cretPW@h:1/m?sentinelPassword=s3cretSPW&x=1'));
      expect(error.message).not.toContain('s3cretPW');
      expect(error.message).not.toContain('s3cretSPW');
    }
  });

  it('its secrets are known to the redaction layer and masked in text', () => {
    const url = 'redis+sentinel://u:p%40ss1@h:1,h:2/m?sentinelPassword=sent1nel';
    expect(urlSecrets(url).sort()).toEqual(['p%40ss1', 'p@ss1', 'sent1nel']);
    expect(redactUrl(url)).toBe('redis+sentinel://u:***@h:1,h:2/m?sentinelPassword=***');
    expect(describeConnection(url)).toBe('redis+sentinel://u:***@h:1,h:2/m?sentinelPassword=***');
  });

  it('opens a lazy ioredis client through the sentinels, with the transport\'s own options on top', () => {
    const opened = openConnection('redis+sentinel://:pw@127.0.0.1:26390/m/2?sentinelPassword=spw', 'test');
    const { options, status } = opened.client as Redis;
    expect(status).toBe('wait');
    expect(options).toMatchObject({
      sentinels: [{ host: '127.0.0.1', port: 26390 }],
      name: 'm',
      db: 2,
      password: 'pw',
      sentinelPassword: 'spw',
      connectionName: 'nestjs-redis-streams:test',
      // Follows +switch-master at once (test/e2e/sentinel-failover.spec.ts shows why).
      failoverDetector: true,
    });
    opened.client.disconnect();
  });
});

describe('the ioredis Sentinel options ({ sentinels, name, ... }) checked in the constructor', () => {
  describe.each(BUILDERS)('%s', (_, build) => {
    it.each([
      [{ sentinels: [], name: 'm' }, 'connection.sentinels'],
      [{ sentinels: 'h:26379', name: 'm' }, 'connection.sentinels'],
      [{ sentinels: [{ host: 'h', port: 26379 }, null], name: 'm' }, 'connection.sentinels[1]'],
      [{ sentinels: [{ host: 'h', port: 26379 }, { host: 'h', port: '26380' }], name: 'm' }, 'connection.sentinels[1].port'],
      [{ sentinels: [{ host: '', port: 26379 }], name: 'm' }, 'connection.sentinels[0].host'],
      [{ sentinels: [{ host: 'h', port: 26379 }] }, 'connection.name'],
      [{ sentinels: [{ host: 'h', port: 26379 }], name: 'm', role: 'slave' }, 'connection.role'],
    ])('%j: a RedisStreamsOptionError naming %s', (connection, option) => {
      expect(optionError(() => build(connection))).toMatchObject({ name: 'RedisStreamsOptionError', option });
    });
  });

  it('tls means TLS to the primary too (ioredis would connect to it in clear text without enableTLSForSentinelMode); an explicit value wins', () => {
    const sentinels = [{ host: '127.0.0.1', port: 26390 }];
    const withTls = openConnection({ sentinels, name: 'm', tls: { servername: 'redis.example' } }, 'test').client as Redis;
    expect(withTls.options).toMatchObject({ tls: { servername: 'redis.example' }, enableTLSForSentinelMode: true });
    const explicit = openConnection({ sentinels, name: 'm', tls: {}, enableTLSForSentinelMode: false }, 'test').client as Redis;
    expect(explicit.options.enableTLSForSentinelMode).toBe(false);
    const plain = openConnection({ sentinels, name: 'm' }, 'test').client as Redis;
    expect(plain.options.enableTLSForSentinelMode).toBe(false);
    for (const client of [withTls, explicit, plain]) client.disconnect();
  });

  it('the failover detector is on unless turned off', () => {
    const sentinels = [{ host: '127.0.0.1', port: 26390 }];
    const byDefault = openConnection({ sentinels, name: 'm' }, 'test').client as Redis;
    const off = openConnection({ sentinels, name: 'm', failoverDetector: false }, 'test').client as Redis;
    const standalone = openConnection({ host: '127.0.0.1', port: 6390 }, 'test').client as Redis;
    expect([byDefault.options.failoverDetector, off.options.failoverDetector, standalone.options.failoverDetector]).toEqual([true, false, false]);
    for (const client of [byDefault, off, standalone]) client.disconnect();
  });

  it('a sentinel gets a bounded time to answer (ioredis sets none): a third of connectTimeout, at most 2 s; an explicit value wins', () => {
    const sentinels = [{ host: '127.0.0.1', port: 26390 }];
    const open = (options: object, overrides?: object) => (openConnection({ sentinels, name: 'm', ...options }, 'test', overrides).client as Redis).options;
    const clients = [
      open({}),
      open({ connectTimeout: 900 }),
      open({ connectTimeout: 0 }),
      open({ connectTimeout: 60_000 }, { connectTimeout: 1_500 }),
      open({ sentinelCommandTimeout: 7_000 }),
      (openConnection('redis+sentinel://127.0.0.1:26390/m', 'test', { connectTimeout: 600 }).client as Redis).options,
    ];
    expect(clients.map((options) => options.sentinelCommandTimeout)).toEqual([2_000, 300, 2_000, 500, 7_000, 200]);
    expect((openConnection({ host: '127.0.0.1', port: 6390 }, 'test').client as Redis).options.sentinelCommandTimeout).toBeUndefined();
  });

  it('describes the connection by primary name and sentinels, without passwords', () => {
    expect(describeConnection({ sentinels: [{ host: 'a', port: 1 }, { host: 'b' }], name: 'm', password: 'pw12', sentinelPassword: 'spw12' })).toBe(
      'the primary "m" of the sentinels a:1, b:26379',
    );
  });
});
