// `nestjs-redis-streams/health`: the @nestjs/terminus part. Only this entry point loads terminus.
export { RedisStreamsHealthIndicator } from './redis-streams-health.indicator.js';
export type { ServerHealthReport } from './redis-streams-health.indicator.js';
export { RedisStreamsHealthModule } from './redis-streams-health.module.js';
export type { RedisStreamsHealthOptions } from './health.options.js';
export type { RedisStreamsHealthThresholds, StreamCounts } from './health-verdict.js';
