/**
 * The client's status and events, in a file of their own: the published type declarations of the
 * client reach them without pulling in the telemetry module (and `@opentelemetry/api`, an optional
 * peer that a user's strict type-check without `skipLibCheck` would then require).
 */
export type RedisStreamsClientStatus = 'connected' | 'disconnected' | 'reconnecting';

/** ioredis events of the client's producer connection, passed through by `on()`. */
export type RedisStreamsClientEvents = {
  connect: () => void;
  ready: () => void;
  error: (error: Error) => void;
  close: () => void;
  reconnecting: (delayMs: number) => void;
  end: () => void;
};
