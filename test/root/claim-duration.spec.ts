import { describe, expect, it } from 'vitest';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { durationMillisOption } from '../../src/duration.js';

const ms = (value: unknown) => durationMillisOption('minIdleTime', value);

describe('minIdleTime durations', () => {
  it.each([
    [1, 1],
    [600_000, 600_000],
    [1.9, 1],
    ['600000', 600_000],
    ['PT10M', 600_000],
    ['pt10m', 600_000],
    ['PT0.5S', 500],
    ['PT0,5S', 500],
    ['PT1.001S', 1001],
    ['PT0.001S', 1],
    ['PT0.0019S', 1],
    ['PT0.5M', 30_000],
    ['PT1H', 3_600_000],
    ['P1D', 86_400_000],
    ['P1DT2H', 93_600_000],
    ['P2W', 1_209_600_000],
    ['PT1H30M15.25S', 5_415_250],
  ])('%j is %i ms', (input, expected) => {
    expect(ms(input)).toBe(expected);
  });

  it.each([
    [undefined, 'is required'],
    [null, 'is required'],
    [0, 'at least 1 millisecond'],
    [-5, 'at least 1 millisecond'],
    [Number.NaN, 'finite'],
    [Number.POSITIVE_INFINITY, 'finite'],
    ['PT0.0004S', 'at least 1 millisecond'],
    ['PT0S', 'at least 1 millisecond'],
    ['0', 'at least 1 millisecond'],
    ['P1Y', 'years have no fixed length'],
    ['P1M', 'months have no fixed length'],
    ['P1Y2M3D', 'years have no fixed length'],
    ['-PT10M', 'ISO-8601'],
    ['xPT10Mx', 'ISO-8601'],
    ['10 minutes', 'ISO-8601'],
    ['P', 'invalid duration'],
    ['PT', 'invalid duration'],
    ['PT1.5H30M', 'smallest unit'],
    ['99999999999999999999', 'too large'],
    [{}, 'milliseconds or an ISO-8601'],
  ])('%j is rejected (%s)', (input, reason) => {
    let error: unknown;
    try {
      ms(input);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RedisStreamsOptionError);
    expect((error as RedisStreamsOptionError).option).toBe('minIdleTime');
    expect((error as Error).message).toContain(reason);
  });
});
