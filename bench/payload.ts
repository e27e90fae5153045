import { nowNs } from './clock.js';

/** The benchmark message: a JSON object whose serialized form is exactly 100 bytes. */
export interface BenchPayload {
  /** Producer's clock (ns, shared monotonic clock) when the message was created. */
  t: number;
  /** Padding up to 100 bytes of JSON. */
  pad: string;
}

export const PAYLOAD_BYTES = 100;

/** A fresh payload stamped now. The timestamp width is fixed, so every payload has the same size. */
export function makePayload(): BenchPayload {
  return makePayloadAt(nowNs());
}

/**
 * A payload stamped with another reading of the shared clock: a delayed entry carries its due
 * time, so the handler's `ageNs` is its lateness after that time.
 */
export function makePayloadAt(t: number): BenchPayload {
  return { t, pad: padFor(t) };
}

const pads = new Map<number, string>();

function padFor(t: number): string {
  // {"t":<digits>,"pad":"<x...>"} = 15 bytes of syntax + digits + pad.
  const width = PAYLOAD_BYTES - 15 - String(t).length;
  let pad = pads.get(width);
  if (pad === undefined) {
    pad = 'x'.repeat(Math.max(0, width));
    pads.set(width, pad);
  }
  return pad;
}

/** Age of a payload (now minus its stamp) in nanoseconds, for the latency recorder. */
export function ageNs(payload: unknown): number {
  const t = (payload as Partial<BenchPayload> | null)?.t;
  return typeof t === 'number' ? nowNs() - t : Number.NaN;
}
