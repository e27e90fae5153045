import { RedisStreamsOptionError } from '../errors.js';
import { booleanOption, describe, integerOption } from '../validation.js';

/**
 * OpenTelemetry of a server or client (the `telemetry` option). Used only when
 * `@opentelemetry/api` is installed and a tracer / meter provider is registered before
 * `listen()` / the first `connect()`. See docs/observability.md.
 */
export interface TelemetryOptions {
  /** Producer and consumer spans, trace context in the entry's headers. Default `true`. */
  tracing?: boolean;
  /** Counters, the process duration histogram and the lag / pending / dead-letter gauges. Default `true`. */
  metrics?: boolean;
  /** Server: ms between the Redis queries behind the lag / pending / dead-letter gauges. Default 15000. */
  gaugeInterval?: number;
}

export interface ResolvedTelemetryOptions {
  readonly tracing: boolean;
  readonly metrics: boolean;
  readonly gaugeInterval: number;
}

/** `false` turns telemetry off; `true` or nothing: on when OpenTelemetry is there. */
export function resolveTelemetryOptions(value: boolean | TelemetryOptions | undefined): ResolvedTelemetryOptions {
  if (value === undefined || value === true) return { tracing: true, metrics: true, gaugeInterval: 15_000 };
  if (value === false) return { tracing: false, metrics: false, gaugeInterval: 15_000 };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError('telemetry', `must be a boolean or { tracing?, metrics?, gaugeInterval? }, got ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (key !== 'tracing' && key !== 'metrics' && key !== 'gaugeInterval') throw new RedisStreamsOptionError(`telemetry.${key}`, 'is not a telemetry option');
  }
  return {
    tracing: booleanOption('telemetry.tracing', value.tracing, true),
    metrics: booleanOption('telemetry.metrics', value.metrics, true),
    gaugeInterval: integerOption('telemetry.gaugeInterval', value.gaugeInterval, 15_000, 100),
  };
}
