// The only module that loads `@opentelemetry/api`, an optional peer dependency: a dynamic
// import, done once, that resolves to undefined when the package is not installed.
export type OpenTelemetryApi = typeof import('@opentelemetry/api');

let loading: Promise<OpenTelemetryApi | undefined> | undefined;

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
