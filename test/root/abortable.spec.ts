import { describe, expect, it } from 'vitest';
import { Abortable } from '../../src/abortable.js';

describe('Abortable', () => {
  it('settles a wrapped promise like the promise itself while not aborted', async () => {
    const inFlight = new Abortable();
    await expect(inFlight.wrap(Promise.resolve(42))).resolves.toBe(42);
    await expect(inFlight.wrap(Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  });

  it('abort() rejects what is still pending, and every later wrap, with its reason', async () => {
    const inFlight = new Abortable();
    const never = new Promise<never>(() => undefined);
    const pending = inFlight.wrap(never);
    inFlight.abort(new Error('stopped'));
    await expect(pending).rejects.toThrow('stopped');
    await expect(inFlight.wrap(Promise.resolve(1))).rejects.toThrow('stopped');
  });
});
