import { makePayload } from './payload.js';

/**
 * Our transport as the bench drives it, in one place, so that changes of its API touch one file.
 * Until a piece has landed in src/, its contenders are listed as unavailable.
 */
export interface StreamsEmitter {
  unavailable?: string;
  open(): Promise<void>;
  /** `emit` of a fresh 100-byte payload to the stream `key`. */
  emit(key: string): Promise<unknown>;
  /** `send` (request/reply) of a fresh payload to the pattern. */
  send(pattern: string): Promise<unknown>;
  close(): Promise<void>;
}

export const streamsPieces = {
  client: false,
  server: false,
  claim: false,
};

export function streamsEmitter(_url: string): StreamsEmitter {
  return {
    unavailable: 'RedisStreamsClient has not landed yet',
    open: async () => undefined,
    emit: async () => makePayload(),
    send: async () => makePayload(),
    close: async () => undefined,
  };
}
