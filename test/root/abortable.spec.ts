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

describe('Abortable: a promise it cuts short or refuses', () => {
  /** Unhandled rejections seen while `run` goes on and for a few turns after it. */
  async function unhandledDuring(run: () => Promise<void>): Promise<unknown[]> {
    const seen: unknown[] = [];
    const note = (reason: unknown): void => void seen.push(reason);
    process.on('unhandledRejection', note);
    try {
      await run();
      // Node reports an unhandled rejection after the microtasks of the turn it happened in.
      await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('unhandledRejection', note);
    }
    return seen;
  }

  it('a command wrapped after abort() that later fails (ioredis: "Connection is closed") is no unhandled rejection', async () => {
    const seen = await unhandledDuring(async () => {
      const inFlight = new Abortable();
      inFlight.abort(new Error('reader stopped'));
      let fail: (error: Error) => void = () => undefined;
      const command = new Promise<never>((_, reject) => (fail = reject));
      await expect(inFlight.wrap(command)).rejects.toThrow('reader stopped');
      fail(new Error('Connection is closed.'));
    });
    expect(seen).toEqual([]);
  });

  it('a command cut short by abort() that later fails is no unhandled rejection either', async () => {
    const seen = await unhandledDuring(async () => {
      const inFlight = new Abortable();
      let fail: (error: Error) => void = () => undefined;
      const command = new Promise<never>((_, reject) => (fail = reject));
      const wrapped = inFlight.wrap(command);
      inFlight.abort(new Error('reader stopped'));
      await expect(wrapped).rejects.toThrow('reader stopped');
      fail(new Error('Connection is closed.'));
    });
    expect(seen).toEqual([]);
  });
});
