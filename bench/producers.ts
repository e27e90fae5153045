import type { Redis } from 'ioredis';
import { nowNs, sleep } from './clock.js';
import { makePayload } from './payload.js';

/** Sends `total` messages keeping `inFlight` of them outstanding at any time. */
export async function sendInFlight(total: number, inFlight: number, sendOne: () => Promise<unknown>): Promise<void> {
  let started = 0;
  const lane = async (): Promise<void> => {
    while (started < total) {
      started++;
      await sendOne();
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, total) }, lane));
}

/**
 * Sends `rate` messages a second for `seconds`, on schedule (a late tick catches up), without
 * waiting for replies between messages; resolves when every send has settled.
 */
export async function sendPaced(rate: number, seconds: number, sendOne: () => Promise<unknown>): Promise<number> {
  const total = Math.round(rate * seconds);
  const pending: Promise<unknown>[] = [];
  const start = nowNs();
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((nowNs() - start) / 1e9) * rate) + 1);
    while (sent < due) {
      pending.push(sendOne());
      sent++;
    }
    await sleep(1);
  }
  await Promise.all(pending);
  return total;
}

/** The raw producer: XADD MAXLEN ~ with the default wire fields (`pattern`, `data` as JSON). */
export function rawXadd(redis: Redis, key: string, maxLen: number): () => Promise<unknown> {
  const cap = String(maxLen);
  return () => redis.xadd(key, 'MAXLEN', '~', cap, '*', 'pattern', key, 'data', JSON.stringify(makePayload()));
}

/** Fills a stream fast (big pipelines), with entries in the default wire format. */
export async function fillStream(redis: Redis, key: string, count: number, batch = 5_000): Promise<void> {
  const payload = JSON.stringify(makePayload());
  let written = 0;
  const pipelinesInFlight = 2;
  const lane = async (): Promise<void> => {
    while (written < count) {
      const size = Math.min(batch, count - written);
      written += size;
      const pipeline = redis.pipeline();
      for (let i = 0; i < size; i++) pipeline.xadd(key, '*', 'pattern', key, 'data', payload);
      const results = await pipeline.exec();
      const failed = results?.find(([error]) => error);
      if (failed) throw failed[0];
    }
  };
  await Promise.all(Array.from({ length: pipelinesInFlight }, lane));
}

/** Resolves with the clock reading at which the group has nothing pending any more. */
export async function waitAcked(redis: Pick<Redis, 'xpending'>, key: string, group: string, timeoutMs = 30_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const summary = (await redis.xpending(key, group)) as [number, ...unknown[]];
    if (Number(summary[0]) === 0) return nowNs();
    if (Date.now() > deadline) throw new Error(`${summary[0]} entries of ${key}/${group} still pending after ${timeoutMs} ms`);
    await sleep(2);
  }
}

/**
 * Sends `rate` messages a second, on schedule (a late tick catches up), until `signal` aborts;
 * resolves with the count once every send has settled (flow-pause: a load that outlasts the cycles).
 */
export async function sendPacedUntil(rate: number, signal: AbortSignal, sendOne: () => Promise<unknown>): Promise<number> {
  const start = nowNs();
  let sent = 0;
  let settled = 0;
  let failure: unknown;
  const done = (): void => {
    settled++;
  };
  while (!signal.aborted) {
    const due = Math.floor(((nowNs() - start) / 1e9) * rate) + 1;
    while (sent < due) {
      sent++;
      sendOne().then(done, (error: unknown) => {
        failure ??= error;
        done();
      });
    }
    await sleep(1);
  }
  while (settled < sent) await sleep(1);
  if (failure !== undefined) throw failure;
  return sent;
}
