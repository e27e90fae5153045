import { describe, expect, it } from 'vitest';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { resolveRecoveryOptions } from '../../src/recovery/recovery-options.js';

describe('recovery options', () => {
  it('validates options and names the bad one', () => {
    const bad: Array<[unknown, string]> = [
      [{ minIdleTime: 0 }, 'recovery.minIdleTime'],
      [{ minIdleTime: 'soon' }, 'recovery.minIdleTime'],
      [{ interval: -5 }, 'recovery.interval'],
      [{ maxDeliveries: 0 }, 'recovery.maxDeliveries'],
      [{ pageSize: 10_001 }, 'recovery.pageSize'],
      [{ maxPages: 0 }, 'recovery.maxPages'],
      [{ leases: 'yes' }, 'recovery.leases'],
      [{ leases: null }, 'recovery.leases'],
      [{ leases: { maxBlocked: 999 } }, 'recovery.leases.maxBlocked'],
      [{ leases: { maxBlocked: 'later' } }, 'recovery.leases.maxBlocked'],
      [{ leases: { maxBlocked: 2 ** 31 } }, 'recovery.leases.maxBlocked'],
      [{ leases: { thread: false, maxBlocked: 60_000 } }, 'recovery.leases.maxBlocked'],
      [{ leases: { thread: 'no' } }, 'recovery.leases.thread'],
      [{ leases: { maxBlock: 60_000 } }, 'recovery.leases.maxBlock'],
      [{ reapConsumers: { every: 0 } }, 'recovery.reapConsumers.every'],
      [{ onDeadLetter: 'log' }, 'recovery.onDeadLetter'],
      [{ minIdel: 5 }, 'recovery.minIdel'],
      ['fast', 'recovery'],
    ];
    for (const [value, option] of bad) {
      expect(() => resolveRecoveryOptions(value), option).toThrow(RedisStreamsOptionError);
      try {
        resolveRecoveryOptions(value);
      } catch (error) {
        expect((error as RedisStreamsOptionError).option).toBe(option);
      }
    }
    const defaults = resolveRecoveryOptions(undefined);
    expect(defaults).toMatchObject({ enabled: true, minIdleTime: 30_000, interval: 7_500, maxDeliveries: 5, pageSize: 100, maxPages: 10, leases: true, trimCheckEvery: 10 });
    expect(resolveRecoveryOptions({ minIdleTime: 'PT1M' })).toMatchObject({ minIdleTime: 60_000, interval: 15_000 });
    // Leases: on, from the thread, given back after 5 min of a blocked event loop, unless told otherwise.
    expect(defaults.leaseThread).toEqual({ enabled: true, maxBlocked: 300_000 });
    expect(resolveRecoveryOptions({ leases: false })).toMatchObject({ leases: false });
    expect(resolveRecoveryOptions({ leases: { maxBlocked: 'PT2M' } })).toMatchObject({ leases: true, leaseThread: { enabled: true, maxBlocked: 120_000 } });
    expect(resolveRecoveryOptions({ leases: { thread: false } })).toMatchObject({ leases: true, leaseThread: { enabled: false } });
    expect(resolveRecoveryOptions(false).enabled).toBe(false);
  });
});
