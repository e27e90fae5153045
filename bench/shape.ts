import type { Redis } from 'ioredis';
import { makePayload } from './payload.js';

/** The stream keys of a worker reading `streams` streams: `key` alone for one. */
export function shapeKeys(key: string, streams: number): string[] {
  return streams === 1 ? [key] : Array.from({ length: streams }, (_, i) => `${key}:${i}`);
}

/** Writes `total` entries round-robin over the keys, in the default wire format; `dataBytes` pads the payload. */
export async function fillKeys(redis: Redis, keys: readonly string[], total: number, dataBytes = 0, batch = 2_000): Promise<void> {
  const payload = dataBytes > 0 ? JSON.stringify({ ...makePayload(), pad: 'x'.repeat(dataBytes) }) : JSON.stringify(makePayload());
  for (let written = 0; written < total; ) {
    const pipeline = redis.pipeline();
    const size = Math.min(dataBytes > 100_000 ? 10 : batch, total - written);
    for (let i = 0; i < size; i++, written++) {
      const key = keys[written % keys.length] as string;
      pipeline.xadd(key, '*', 'pattern', key, 'data', payload);
    }
    const results = await pipeline.exec();
    const failed = results?.find(([error]) => error);
    if (failed) throw failed[0];
  }
}
