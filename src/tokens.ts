/** DI token of the shared command connection (`Redis` or `Cluster`) the module opens. */
export const REDIS_STREAMS_CONNECTION = Symbol('REDIS_STREAMS_CONNECTION');

/** DI token of the resolved `RedisStreamsModuleOptions`. */
export const REDIS_STREAMS_MODULE_OPTIONS = Symbol('REDIS_STREAMS_MODULE_OPTIONS');
