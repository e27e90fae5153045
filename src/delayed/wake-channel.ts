import { companionKey } from '../redis/keys.js';

/**
 * The Pub/Sub channel on which a hold that becomes the earliest of its stream's schedule is
 * announced (hold.lua), so the workers promoting that stream re-arm their next round for it
 * instead of waiting for their interval (docs/scheduling.md, "Wake-up"). Named like the
 * delayed keys, with the stream's hash tag: `{orders}:delayed-wake`.
 */
export function delayedWakeChannel(stream: string): string {
  return companionKey(stream, 'delayed-wake');
}

/**
 * How long from now (ms, ≥ 0) until the hold a wake-up message announces is due; `undefined` for a
 * message that is not one. The message is `<due ms> <Redis' now ms>`, both on Redis' clock
 * (hold.lua), so the wait does not depend on this host's clock.
 */
export function wakeDelayMs(message: string): number | undefined {
  const match = /^(-?\d+) (\d+)$/.exec(message);
  if (match === null) return undefined;
  return Math.max(0, Number(match[1]) - Number(match[2]));
}
