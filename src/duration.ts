import { parse as parseIsoDuration, pattern as isoDurationPattern } from 'iso8601-duration';
import { RedisStreamsOptionError } from './errors.js';
import { checkTimerMillis, describe } from './validation.js';

/** Only the ISO-8601 form as a whole; the package's own pattern is not anchored. */
const WHOLE_ISO_DURATION = new RegExp(`^${isoDurationPattern.source}$`);
const DIGITS = /^\d+$/;

/** Milliseconds per unit, in the order the package's pattern captures them. */
const UNIT_MS: readonly (bigint | undefined)[] = [
  undefined, // years: no fixed length
  undefined, // months: no fixed length
  604_800_000n, // weeks
  86_400_000n, // days (24 h, as java.time.Duration counts them)
  3_600_000n,
  60_000n,
  1_000n,
];
const UNIT_NAMES = ['years', 'months', 'weeks', 'days', 'hours', 'minutes', 'seconds'];
const MAX_MS = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * A strictly positive duration in whole milliseconds, from a number of milliseconds, a string of
 * digits (milliseconds), or an ISO-8601 duration (`PT10M`, `PT0.5S`, `P1DT2H`). Fractions are
 * truncated, not rounded, so `PT0.0004S` is 0 ms and rejected. Years and months are rejected
 * because they have no fixed length.
 */
export function durationMillisOption(option: string, value: unknown): number {
  if (value === undefined || value === null) {
    throw new RedisStreamsOptionError(option, 'is required (milliseconds or an ISO-8601 duration such as PT10M)');
  }
  let millis: number;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) {
      throw new RedisStreamsOptionError(option, `must be a finite number of milliseconds, got ${describe(value)}`);
    }
    millis = Math.trunc(value);
  } else if (typeof value === 'string' && DIGITS.test(value)) {
    millis = toSafeMillis(option, BigInt(value), value);
  } else if (typeof value === 'string') {
    millis = isoDurationMillis(option, value);
  } else {
    throw new RedisStreamsOptionError(option, `must be milliseconds or an ISO-8601 duration, got ${describe(value)}`);
  }
  if (millis <= 0) {
    throw new RedisStreamsOptionError(option, `must be at least 1 millisecond, got ${describe(value)}`);
  }
  if (millis > Number.MAX_SAFE_INTEGER) {
    throw new RedisStreamsOptionError(option, `is too large: ${describe(value)}`);
  }
  return millis;
}

/** A duration (as `durationMillisOption`) that ends in a timer: at most `MAX_TIMER_MS`. */
export function timerDurationOption(option: string, value: unknown): number {
  return checkTimerMillis(option, durationMillisOption(option, value));
}

function isoDurationMillis(option: string, text: string): number {
  const normalized = text.trim().toUpperCase();
  const match = WHOLE_ISO_DURATION.exec(normalized.replace(/,/g, '.'));
  if (!match) {
    throw new RedisStreamsOptionError(option, `must be milliseconds or an ISO-8601 duration such as PT10M, got ${describe(text)}`);
  }
  try {
    // The package's own checks (at least one unit, a fraction only on the smallest unit).
    parseIsoDuration(normalized);
  } catch (error) {
    throw new RedisStreamsOptionError(option, `${(error as Error).message} (${describe(text)})`);
  }
  // Exact decimal arithmetic on the captured digits: float maths would turn PT1.001S into 1000 ms.
  let total = 0n;
  for (let unit = 0; unit < UNIT_NAMES.length; unit++) {
    const captured = match[unit + 1];
    if (captured === undefined) continue;
    const unitMs = UNIT_MS[unit];
    if (unitMs === undefined) {
      throw new RedisStreamsOptionError(
        option,
        `${UNIT_NAMES[unit]} have no fixed length; use days or smaller units, got ${describe(text)}`,
      );
    }
    const [whole = '0', fraction = ''] = captured.slice(0, -1).split('.');
    total += (BigInt(whole + fraction) * unitMs) / 10n ** BigInt(fraction.length);
  }
  return toSafeMillis(option, total, text);
}

function toSafeMillis(option: string, millis: bigint, original: string): number {
  if (millis > MAX_MS) throw new RedisStreamsOptionError(option, `is too large: ${describe(original)}`);
  return Number(millis);
}
