export { RedisStreamsDecodeError, RedisStreamsOptionError } from './errors.js';
export type { RedisConnection } from './redis/connection.js';
export { deadLetterKey } from './redis/keys.js';
export { WireField } from './codec/wire-format.js';
export type { Headers, StreamFields } from './codec/wire-format.js';
