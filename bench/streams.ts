import { lastValueFrom } from 'rxjs';
import { RedisStreamsClient, RedisStreamsRecord } from '../src/index.js';
import { makePayload } from './payload.js';

/**
 * Our transport as the bench drives it, in one place, so that changes of its API touch one file
 * (plus workers/streams-worker.ts and workers/claim-streams.ts). Pieces that have not landed in
 * src/ yet are marked here, and their contenders are listed as unavailable.
 */
export interface StreamsEmitter {
  unavailable?: string;
  open(): Promise<void>;
  /** `emit` of a fresh 100-byte payload to the stream `key`; resolves with the entry id. */
  emit(key: string): Promise<unknown>;
  /** `send` (request/reply) of a fresh payload to the pattern; resolves with the reply. */
  send(pattern: string): Promise<unknown>;
  close(): Promise<void>;
}

export const streamsPieces = {
  client: true,
  server: true,
  claim: true,
};

/** A `RedisStreamsClient` with its defaults (MAXLEN ~ 100000, auto-pipelined XADD). */
export function streamsEmitter(url: string): StreamsEmitter {
  const client = new RedisStreamsClient({ connection: url });
  return {
    open: async () => {
      await client.connect();
    },
    emit: (key) => lastValueFrom(client.emit(key, makePayload())),
    send: (pattern) => lastValueFrom(client.send(pattern, makePayload())),
    close: () => client.close(),
  };
}

/** Delayed emits (`RedisStreamsRecord` `deliverAt`) of a `RedisStreamsClient` with its defaults. */
export interface DelayedEmitter {
  open(): Promise<void>;
  /** `emit` of `payload` to `key`, held until `deliverAt` (Unix ms); resolves with the hold id. */
  emitAt(key: string, payload: unknown, deliverAt: number): Promise<unknown>;
  close(): Promise<void>;
}

export function delayedEmitter(url: string): DelayedEmitter {
  const client = new RedisStreamsClient({ connection: url });
  return {
    open: async () => {
      await client.connect();
    },
    emitAt: (key, payload, deliverAt) => lastValueFrom(client.emit(key, new RedisStreamsRecord(payload, { deliverAt }))),
    close: () => client.close(),
  };
}

/**
 * A `RedisStreamsClient` with `idempotence` on (Redis 8.6+): `auto` emits carry `IDMPAUTO <producer>`
 * (Redis hashes the fields); `keyed` emits carry `IDMP <producer> <key>` with a fresh key per emit.
 */
export function idempotentEmitter(url: string, mode: 'auto' | 'keyed'): StreamsEmitter {
  const client = new RedisStreamsClient({ connection: url, idempotence: { producerId: `bench-${mode}` } });
  let next = 0;
  const record = mode === 'keyed' ? () => new RedisStreamsRecord(makePayload(), { idempotencyKey: `k${next++}` }) : () => makePayload();
  return {
    open: async () => {
      await client.connect();
    },
    emit: (key) => lastValueFrom(client.emit(key, record())),
    send: (pattern) => lastValueFrom(client.send(pattern, makePayload())),
    close: () => client.close(),
  };
}

/**
 * A `RedisStreamsClient` on a Redis Cluster given by its node URLs, defaults otherwise; with
 * `partitions` > 1 the pattern is spread over that many partitions (no partition key: round robin).
 */
export function clusterEmitter(nodes: readonly string[], pattern: string, partitions: number): StreamsEmitter {
  const client = new RedisStreamsClient({
    connection: { cluster: { nodes: [...nodes] } },
    ...(partitions > 1 ? { partitions: { [pattern]: partitions } } : {}),
  });
  return {
    open: async () => {
      await client.connect();
    },
    emit: (key) => lastValueFrom(client.emit(key, makePayload())),
    send: (key) => lastValueFrom(client.send(key, makePayload())),
    close: () => client.close(),
  };
}
