export { RedisStreamsDecodeError, RedisStreamsOptionError } from './errors.js';
export type { RedisConnection } from './redis/connection.js';
export { deadLetterKey } from './redis/keys.js';
export { WireField } from './codec/wire-format.js';
export type { Headers, StreamFields } from './codec/wire-format.js';
export { RedisStreamsClient } from './client/redis-streams-client.js';
export type { RedisStreamsClientEvents, RedisStreamsClientStatus } from './client/redis-streams-client.js';
export type { RedisStreamsClientOptions } from './client/redis-streams-client.options.js';
export { RedisStreamsClientModule } from './client/redis-streams-client.module.js';
export type {
  RedisStreamsClientAsyncRegistration,
  RedisStreamsClientRegistration,
} from './client/redis-streams-client.module.js';
export { RedisStreamsRecord, RedisStreamsRecordBuilder } from './client/redis-streams-record.js';
export type { RedisStreamsRecordOptions } from './client/redis-streams-record.js';
export type { MaxAgeTrimming, MaxLenTrimming, StreamTrimming } from './client/trimming.js';
export {
  NO_MESSAGE_HANDLER,
  RedisStreamsNoHandlerError,
  RedisStreamsPublishError,
  RedisStreamsTimeoutError,
} from './client/errors.js';
