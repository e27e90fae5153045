import type { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { closeConnection, openConnection } from '../../src/redis/connection.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/**
 * A socket that errors twice (a failed TLS handshake followed by the peer's alert, seen in the
 * suite as an uncaught `tlsv1 alert decode error`) must not crash the process: ioredis listens
 * with `once('error')`, so without our guard the second error is thrown by `emit`.
 */
describe('late socket errors on connections we own', () => {
  const redis = useRedisServer();

  it('a second error on the socket is absorbed; the first still reaches ioredis', async () => {
    const opened = openConnection(`redis://127.0.0.1:${redis.server.port}`, 'late-errors');
    try {
      const { client } = opened;
      const heard: Error[] = [];
      client.on('error', (error: Error) => heard.push(error));
      await client.connect();
      await client.ping();
      const stream = (client as unknown as { stream: EventEmitter }).stream;
      expect(() => {
        stream.emit('error', new Error('first'));
        stream.emit('error', new Error('second'));
      }).not.toThrow();
      expect(heard.map((e) => e.message)).toEqual(['first']);
    } finally {
      await closeConnection(opened);
    }
  });
});
