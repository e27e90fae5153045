// The only module that loads `@opentelemetry/api`, an optional peer dependency: a dynamic
// import, done once, that resolves to undefined when the package is not installed.
export type OpenTelemetryApi = typeof import('@opentelemetry/api');

let loading: Promise<OpenTelemetryApi | undefined> | undefined;

/** Where `@opentelemetry/api` (major version 1) keeps what an SDK registered, in every copy of it. */
const API_GLOBAL = Symbol.for('opentelemetry.js.api.1');

/**
 * Which providers an SDK registered, read from the API's global registry without loading the
 * API: with none (the usual case without OpenTelemetry), nothing is imported at all.
 */
export function registeredProviders(): { trace: boolean; metrics: boolean } {
  const registry = (globalThis as { [API_GLOBAL]?: Record<string, unknown> })[API_GLOBAL];
  return { trace: registry?.trace !== undefined, metrics: registry?.metrics !== undefined };
}

/** Whether the API was ever asked for (tests: it must not be, without a registered provider). */
export function openTelemetryApiRequested(): boolean {
  return loading !== undefined;
}

export function loadOpenTelemetryApi(): Promise<OpenTelemetryApi | undefined> {
  loading ??= import('@opentelemetry/api').then(
    (api) => api,
    () => undefined,
  );
  return loading;
}

/**
 * Whether a real tracer provider is registered. The API hands out a proxy whose delegate is the
 * no-op provider until an SDK registers one; with the no-op, we skip every span (no cost at all).
 */
export function hasTracerProvider(api: OpenTelemetryApi): boolean {
  const provider = api.trace.getTracerProvider() as { getDelegate?: () => object };
  const delegate = typeof provider.getDelegate === 'function' ? provider.getDelegate() : provider;
  return delegate.constructor.name !== 'NoopTracerProvider';
}

/** Whether a real meter provider is registered (the metrics API has no proxy: the no-op is returned as is). */
export function hasMeterProvider(api: OpenTelemetryApi): boolean {
  return api.metrics.getMeterProvider().constructor.name !== 'NoopMeterProvider';
}
