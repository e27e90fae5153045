import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { describe, expect, it } from 'vitest';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { resolveServerOptions, type RedisStreamsServerOptions } from '../../src/server/options.js';
import { planPrefetch } from '../../src/server/flow-control.js';
import type { StreamBinding } from '../../src/server/in-flight.js';
import { expectListenOptionError, optionError, UNCONTACTED_SERVER } from '../helpers/option-errors.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

const base = UNCONTACTED_SERVER;

describe('RedisStreamsServer options are validated in the constructor', () => {
  const cases: Array<[string, Partial<Record<keyof RedisStreamsServerOptions, unknown>>, string]> = [
    ['negative concurrency', { concurrency: -1 }, 'concurrency'],
    ['fractional concurrency', { concurrency: 2.5 }, 'concurrency'],
    ['prefetch below concurrency', { concurrency: 10, prefetch: 5 }, 'prefetch'],
    ['empty group', { group: '' }, 'group'],
    ['missing group', { group: undefined }, 'group'],
    ['bad start id', { startId: 'latest' }, 'startId'],
    ['unknown ackMode', { ackMode: 'sometimes' }, 'ackMode'],
    ['zero blockMs', { blockMs: 0 }, 'blockMs'],
    ['negative blockMs', { blockMs: -5 }, 'blockMs'],
    ['empty consumer', { consumer: '' }, 'consumer'],
    ['negative shutdownTimeout', { shutdownTimeout: -1 }, 'shutdownTimeout'],
    ['readBatch of 0', { readBatch: 0 }, 'readBatch'],
    ['maxPrefetchBytes of 0', { maxPrefetchBytes: 0 }, 'maxPrefetchBytes'],
    ['fractional maxPrefetchBytes', { maxPrefetchBytes: 1.5 }, 'maxPrefetchBytes'],
    ['maxPrefetchBytes as a string', { maxPrefetchBytes: '64MB' }, 'maxPrefetchBytes'],
    ['replyTtl of 0', { replyTtl: 0 }, 'replyTtl'],
    ['handoff consumer equal to the consumer', { consumer: 'w1', handoffConsumer: 'w1' }, 'handoffConsumer'],
    ['deserializer without deserialize()', { deserializer: {} }, 'deserializer'],
  ];
  for (const [title, patch, option] of cases) {
    it(`${title} → RedisStreamsOptionError naming "${option}"`, () => {
      const error = optionError(() => new RedisStreamsServer({ ...base, ...patch } as RedisStreamsServerOptions));
      expect(error.option).toBe(option);
      expect(error.message).toContain(`"${option}"`);
    });
  }

  it('a misspelt option is an error naming it, not a silent default', () => {
    const error = optionError(() => new RedisStreamsServer({ ...base, concurency: 5 } as unknown as RedisStreamsServerOptions));
    expect(error.option).toBe('concurency');
  });

  it('the error says what it got: an array, a function or an object, not "object" for all of them', () => {
    const got = (value: unknown) => optionError(() => new RedisStreamsServer({ ...base, reconnectDelay: value } as unknown as RedisStreamsServerOptions)).message;
    expect(got([100, 200])).toContain('must be an object, got an array of 2');
    expect(got(() => 100)).toContain('must be an object, got a function');
    expect(got(10n)).toContain('must be an object, got 10n');
    expect(got('100')).toContain('must be an object, got "100"');
  });

  it('accepts `$` and explicit stream ids as startId; prefetch defaults to max(2 × concurrency, 4 × readBatch)', () => {
    expect(() => new RedisStreamsServer({ ...base, startId: '$' })).not.toThrow();
    expect(() => new RedisStreamsServer({ ...base, startId: '1700000000000-0' })).not.toThrow();
    expect(resolveServerOptions({ ...base }).prefetch).toBe(400);
    expect(resolveServerOptions({ ...base, concurrency: 7 }).prefetch).toBe(400);
    expect(resolveServerOptions({ ...base, concurrency: 250 }).prefetch).toBe(500);
    expect(resolveServerOptions({ ...base, concurrency: 7, readBatch: 2 }).prefetch).toBe(14);
    // prefetch alone below the default concurrency lowers concurrency instead of failing.
    expect(resolveServerOptions({ ...base, prefetch: 3 })).toMatchObject({ prefetch: 3, concurrency: 3 });
    expect(resolveServerOptions({ ...base }).maxPrefetchBytes).toBe(64 * 1024 * 1024);
  });

  it('default prefetch follows the readers: each gets one stream\'s default, or 10 slots per stream it reads', () => {
    const readers = (...streams: number[]) => streams.map((count) => Array.from({ length: count }, () => ({}) as StreamBinding));
    const defaults = resolveServerOptions({ ...base });
    expect(planPrefetch(defaults, readers(1))).toEqual({ prefetch: 400, shares: [400] });
    expect(planPrefetch(defaults, readers(200))).toEqual({ prefetch: 2000, shares: [2000] });
    expect(planPrefetch(defaults, readers(...Array.from({ length: 20 }, () => 1))).prefetch).toBe(8000);
    expect(planPrefetch(defaults, readers(200, 1))).toEqual({ prefetch: 2400, shares: [2000, 400] });
    // A given prefetch is kept, split by the same weights (at least one slot per stream).
    const given = resolveServerOptions({ ...base, prefetch: 400 });
    expect(planPrefetch(given, readers(1, 1))).toEqual({ prefetch: 400, shares: [200, 200] });
    expect(optionError(() => planPrefetch(resolveServerOptions({ ...base, prefetch: 2, concurrency: 1 }), readers(3))).option).toBe('prefetch');
  });
});

@Controller()
class BadGroupController {
  @EventPattern<string>('bad-extras', { group: '' })
  on(@Payload() _data: unknown): void {}
}

@Controller()
class BadRawController {
  @EventPattern<string>('bad-extras', { raw: 'yes' })
  on(@Payload() _data: unknown): void {}
}

@Controller()
class BadAckModeController {
  @EventPattern<string>('bad-extras', { ackMode: 'later' })
  on(@Payload() _data: unknown): void {}
}

@Controller()
class BadStartIdController {
  @EventPattern<string>('bad-extras', { startId: 'now' })
  on(@Payload() _data: unknown): void {}
}

@Controller()
class BadConcurrencyController {
  @EventPattern<string>('bad-extras', { concurrency: 0 })
  on(@Payload() _data: unknown): void {}
}

@Controller()
class BadMinIdleController {
  @EventPattern<string>('bad-extras', { minIdleTime: 'soon' })
  on(@Payload() _data: unknown): void {}
}

describe('per-handler extras are validated in listen(), before any command', () => {
  const redis = useRedisServer();

  const cases: Array<[string, new () => unknown, string]> = [
    ['empty group', BadGroupController, 'extras.group'],
    ['non-boolean raw', BadRawController, 'extras.raw'],
    ['unknown ackMode', BadAckModeController, 'extras.ackMode'],
    ['bad startId', BadStartIdController, 'extras.startId'],
    ['concurrency 0', BadConcurrencyController, 'extras.concurrency'],
    ['bad minIdleTime', BadMinIdleController, 'extras.minIdleTime'],
  ];
  for (const [title, controller, option] of cases) {
    it(`${title} → RedisStreamsOptionError naming "${option}" and the handler`, () =>
      expectListenOptionError(controller, redis.server.url, `${option} (handler "bad-extras")`, redis.client, 'bad-extras'));
  }
});
