import { InternalServerErrorException, RequestTimeoutException } from '@nestjs/common';
import { catchError, lastValueFrom, throwError, type Observable } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsConnectionError } from '../../src/errors.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { freePort, RedisServerProcess } from '../helpers/redis-server.js';
import { settleWithin } from '../helpers/stream-responder.js';
import { waitFor } from '../helpers/wait.js';

/** Nest's disconnected-client e2e controller: a refused connection becomes a 408. */
function asNestController<T>(reply: Observable<T>): Observable<T> {
  return reply.pipe(
    catchError((error: { code?: string } | undefined) => {
      const { code } = error ?? { code: 'CONN_ERR' };
      return throwError(() =>
        code === 'ECONNREFUSED' || code === 'CONN_ERR' ? new RequestTimeoutException('ECONNREFUSED') : new InternalServerErrorException(),
      );
    }),
  );
}

describe('connection errors carry the socket error code (ECONNREFUSED, ETIMEDOUT, ...)', () => {
  it('a client whose Redis refuses connections: connect(), send() and emit() fail with code ECONNREFUSED', async () => {
    const port = await freePort(); // nothing listens there
    const client = new RedisStreamsClient({ connection: `redis://127.0.0.1:${port}`, commandTimeout: 500 });
    try {
      const connected = await settleWithin(client.connect(), 10_000);
      expect(connected.error).toBeInstanceOf(RedisStreamsConnectionError);
      expect(connected.error).toMatchObject({ code: 'ECONNREFUSED' });

      const sent = await settleWithin(lastValueFrom(client.send('sum', [1, 2, 3])), 10_000);
      expect(sent.error).toBeInstanceOf(RedisStreamsConnectionError);
      expect(sent.error).toMatchObject({ code: 'ECONNREFUSED' });

      const emitted = await settleWithin(lastValueFrom(client.emit('sum', [1, 2, 3])), 10_000);
      expect(emitted.error).toMatchObject({ name: 'RedisStreamsPublishError', code: 'ECONNREFUSED' });
      expect((emitted.error as { cause?: unknown }).cause).toBeInstanceOf(RedisStreamsConnectionError);

      // Nest's disconnected-client test maps the code to 408.
      const mapped = await settleWithin(lastValueFrom(asNestController(client.send({ cmd: 'none' }, [1, 2, 3]))), 10_000);
      expect(mapped.error).toBeInstanceOf(RequestTimeoutException);
      expect((mapped.error as RequestTimeoutException).getStatus()).toBe(408);
    } finally {
      await client.close();
    }
  });

  it('a server whose Redis refuses connections: listen() fails with code ECONNREFUSED', async () => {
    const port = await freePort();
    const server = new RedisStreamsServer({ connection: `redis://127.0.0.1:${port}`, group: 'codes', startupTimeout: 500 });
    try {
      const { error } = await settleWithin(new Promise<void>((resolve, reject) => void server.listen((failure) => (failure === undefined ? resolve() : reject(failure)))), 10_000);
      expect(error).toBeInstanceOf(RedisStreamsConnectionError);
      expect(error).toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      await server.close();
    }
  });

  describe('against a redis-server that goes away', () => {
    let redis: RedisServerProcess;
    beforeAll(async () => {
      redis = await RedisServerProcess.start();
    });
    afterAll(async () => {
      await redis.stop();
    });

    it('a first connect to a Redis that accepts but never answers (paused) fails with code ETIMEDOUT', async () => {
      const client = new RedisStreamsClient({ connection: redis.url, commandTimeout: 300 });
      redis.pause();
      try {
        const { error } = await settleWithin(client.connect(), 10_000);
        expect(error).toBeInstanceOf(RedisStreamsConnectionError);
        expect(error).toMatchObject({ code: 'ETIMEDOUT' });
      } finally {
        redis.resume();
        await client.close();
      }
    });

    it('an emit that Redis does not answer within commandTimeout fails with code ETIMEDOUT', async () => {
      const client = new RedisStreamsClient({ connection: redis.url, commandTimeout: 300 });
      try {
        await lastValueFrom(client.emit('codes.paused', 1));
        redis.pause();
        const { error } = await settleWithin(lastValueFrom(client.emit('codes.paused', 2)), 10_000);
        expect(error).toMatchObject({ name: 'RedisStreamsPublishError', code: 'ETIMEDOUT' });
      } finally {
        redis.resume();
        await client.close();
      }
    });

    it('emit() and send() while the connection is down fail at once with the code of the connection\'s error (ECONNREFUSED)', async () => {
      const client = new RedisStreamsClient({ connection: redis.url, commandTimeout: 500 });
      const codes: (string | undefined)[] = [];
      client.on('error', (error) => codes.push((error as { code?: string }).code));
      try {
        await lastValueFrom(client.emit('codes.down', 1));
        await redis.kill();
        await waitFor(() => codes.includes('ECONNREFUSED'), 'a refused reconnect');
        const emitted = await settleWithin(lastValueFrom(client.emit('codes.down', 2)), 10_000);
        expect(emitted.error).toMatchObject({ name: 'RedisStreamsPublishError', code: 'ECONNREFUSED' });
        const sent = await settleWithin(lastValueFrom(asNestController(client.send('codes.down', 2))), 10_000);
        expect(sent.error).toBeInstanceOf(RequestTimeoutException);
      } finally {
        await client.close();
        await redis.restart();
      }
    });
  });
});
