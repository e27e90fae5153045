import { lastValueFrom } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { resolveRecoveryOptions } from '../../src/recovery/recovery-options.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import type { RedisStreamsServerOptions } from '../../src/server/options.js';
import { optionError, UNCONTACTED_SERVER } from '../helpers/option-errors.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/** Node.js timers take at most 2^31 - 1 ms; a longer delay fires after ~1 ms. */
const LONGEST = 2 ** 31 - 1;
const TOO_LONG = 2 ** 31;

const serverBase = UNCONTACTED_SERVER;

describe('durations that end in a timer are bounded by the longest Node.js timer', () => {
  const serverCases: Array<[string, Partial<RedisStreamsServerOptions>]> = [
    ['shutdownTimeout', { shutdownTimeout: TOO_LONG }],
    ['blockMs', { blockMs: TOO_LONG }],
    ['reconnectDelay.initialMs', { reconnectDelay: { initialMs: TOO_LONG } }],
    ['reconnectDelay.maxMs', { reconnectDelay: { maxMs: TOO_LONG } }],
    ['recovery.interval', { recovery: { interval: TOO_LONG } }],
    ['recovery.leaseInterval', { recovery: { leaseInterval: 'P25D' } }],
  ];
  it.each(serverCases)('server: %s ≥ 2^31 ms is a RedisStreamsOptionError naming it', (option, patch) => {
    const error = optionError(() => new RedisStreamsServer({ ...serverBase, ...patch }));
    expect(error.option).toBe(option);
    expect(error.message).toContain(`"${option}"`);
    expect(error.message).toContain('must be at most 2147483647 ms');
  });

  it('server: 2^31 - 1 ms is accepted', () => {
    expect(
      () =>
        new RedisStreamsServer({
          ...serverBase,
          shutdownTimeout: LONGEST,
          blockMs: LONGEST,
          reconnectDelay: { initialMs: LONGEST, maxMs: LONGEST },
          recovery: { interval: LONGEST, leaseInterval: LONGEST },
        }),
    ).not.toThrow();
  });

  it('recovery: a long minIdleTime is fine (Redis compares it), the interval derived from it is capped', () => {
    const resolved = resolveRecoveryOptions({ minIdleTime: 'P100D' });
    expect(resolved.minIdleTime).toBe(8_640_000_000);
    expect(resolved.interval).toBe(LONGEST);
  });

  const clientCases: Array<[string, Record<string, unknown>]> = [
    ['timeout', { timeout: TOO_LONG }],
    ['commandTimeout', { commandTimeout: TOO_LONG }],
    ['replyTtl', { replyTtl: TOO_LONG }],
    ['clockRefreshInterval', { clockRefreshInterval: TOO_LONG }],
  ];
  it.each(clientCases)('client: %s ≥ 2^31 ms is a RedisStreamsOptionError naming it', (option, options) => {
    const error = optionError(() => new RedisStreamsClient(options));
    expect(error.option).toBe(option);
    expect(error.message).toContain('must be at most 2147483647 ms');
  });

  describe('client: a per-call timeout', () => {
    const redis = useRedisServer();
    let client: RedisStreamsClient | undefined;
    afterAll(async () => {
      await client?.close();
    });

    it('≥ 2^31 ms fails the send with a RedisStreamsOptionError naming it (instead of timing out at once)', async () => {
      client = new RedisStreamsClient({ connection: redis.server.url });
      const error = await lastValueFrom(client.send('calc', new RedisStreamsRecord(1, { timeout: TOO_LONG }))).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedisStreamsOptionError);
      expect(error).toMatchObject({ option: 'timeout' });
    });
  });
});
