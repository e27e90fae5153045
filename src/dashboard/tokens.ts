/** DI token of the resolved `RedisStreamsDashboardOptions`. */
export const REDIS_STREAMS_DASHBOARD_OPTIONS = Symbol('REDIS_STREAMS_DASHBOARD_OPTIONS');
