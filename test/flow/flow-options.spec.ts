import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { describe, expect, it } from 'vitest';
import { resolveHandlerExtras } from '../../src/server/handler-extras.js';
import { resolveServerOptions } from '../../src/server/options.js';
import { expectListenOptionError, optionError, UNCONTACTED_SERVER } from '../helpers/option-errors.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

const server = resolveServerOptions(UNCONTACTED_SERVER);
const extras = (given: Record<string, unknown>) => resolveHandlerExtras('calls', given, server);

@Controller()
class DisagreeingLimits {
  @EventPattern<string>('calls', { rateLimit: { max: 10, per: 1000 } })
  one(): void {}

  @EventPattern<string>('calls', { rateLimit: { max: 20, per: 1000 } })
  other(): void {}
}

describe('extras.rateLimit and extras.globalConcurrency: resolved, and bad values named', () => {
  const redis = useRedisServer();

  it('resolves a rate limit with ms or ISO-8601 periods, and a concurrency as a number or { max, lease }', () => {
    expect(extras({ rateLimit: { max: 100, per: 'PT1S' } }).rateLimit).toEqual({ max: 100, perMs: 1000 });
    expect(extras({ rateLimit: { max: 5, per: 250 } }).rateLimit).toEqual({ max: 5, perMs: 250 });
    expect(extras({ globalConcurrency: 4 }).globalConcurrency).toEqual({ max: 4, leaseMs: 30_000 });
    expect(extras({ globalConcurrency: { max: 2, lease: 'PT5S' } }).globalConcurrency).toEqual({ max: 2, leaseMs: 5000 });
    expect(extras({}).rateLimit).toBeUndefined();
    expect(extras({}).globalConcurrency).toBeUndefined();
  });

  it.each([
    [{ rateLimit: 100 }, 'extras.rateLimit (handler "calls")', 'must be { max, per, key? }'],
    [{ rateLimit: { per: 1000 } }, 'extras.rateLimit (handler "calls").max', 'is required'],
    [{ rateLimit: { max: 10 } }, 'extras.rateLimit (handler "calls").per', 'is required'],
    [{ rateLimit: { max: 0, per: 1000 } }, 'extras.rateLimit (handler "calls").max', 'must be >= 1'],
    [{ rateLimit: { max: 1.5, per: 1000 } }, 'extras.rateLimit (handler "calls").max', 'must be an integer'],
    [{ rateLimit: { max: 10, per: 'soon' } }, 'extras.rateLimit (handler "calls").per', 'ISO-8601'],
    [{ rateLimit: { max: 10, per: 1000, burst: 5 } }, 'extras.rateLimit (handler "calls").burst', 'is not an option here (max, per, key)'],
    [{ rateLimit: { max: 10, per: 1000, key: 'tenant' } }, 'extras.rateLimit (handler "calls").key', 'must be a function'],
    [{ rateLimit: { max: 10, per: 1000, key: () => 't' }, batch: { size: 10 } }, 'extras.rateLimit (handler "calls").key', 'cannot be used with extras.batch'],
    [{ globalConcurrency: 0 }, 'extras.globalConcurrency (handler "calls")', 'must be >= 1'],
    [{ globalConcurrency: '3' }, 'extras.globalConcurrency (handler "calls")', 'must be a number or { max, lease? }'],
    [{ globalConcurrency: { lease: 5000 } }, 'extras.globalConcurrency (handler "calls").max', 'is required'],
    [{ globalConcurrency: { max: 2, lease: 10 } }, 'extras.globalConcurrency (handler "calls").lease', 'must be at least 1000 ms'],
    [{ globalConcurrency: { max: 2, leases: 5000 } }, 'extras.globalConcurrency (handler "calls").leases', 'is not an option here'],
  ])('%j: a RedisStreamsOptionError naming %s', (given, option, message) => {
    const error = optionError(() => extras(given));
    expect(error.option).toBe(option);
    expect(error.message).toContain(message);
  });

  it('handlers of one pattern and group that disagree on their limits fail listen() before any command', async () => {
    await expectListenOptionError(DisagreeingLimits, redis.server.url, 'extras', redis.client, 'calls');
  });
});
