import { Logger } from '@nestjs/common';
import { lastValueFrom } from 'rxjs';
import { ClientProxyFactory, Transport, type ClientProxy } from '@nestjs/microservices';
import { Queue } from 'bullmq';
import { makePayload } from './payload.js';

// Nest's info logs ("Connected to Redis...") would drown the progress lines.
Logger.overrideLogger(['error', 'warn']);

/** A client of NestJS' built-in Redis (pub/sub) transport. */
export async function nestRedisClient(url: string): Promise<ClientProxy> {
  const { hostname, port } = new URL(url);
  const client = ClientProxyFactory.create({ transport: Transport.REDIS, options: { host: hostname, port: Number(port) } });
  await client.connect();
  return client;
}

export function nestEmit(client: ClientProxy, pattern: string): () => Promise<unknown> {
  return () => lastValueFrom(client.emit(pattern, makePayload()), { defaultValue: undefined });
}

export function nestSend(client: ClientProxy, pattern: string): () => Promise<unknown> {
  return () => lastValueFrom(client.send(pattern, makePayload()));
}

export function bullmqQueue(url: string, name: string): Queue {
  const { hostname, port } = new URL(url);
  return new Queue(name, { connection: { host: hostname, port: Number(port) } });
}

/** Queue.addBulk of `batch` jobs (completed and failed jobs removed, so Redis does not grow). */
export function bullmqAddBulk(queue: Queue, batch: number): () => Promise<unknown> {
  return () =>
    queue.addBulk(
      Array.from({ length: batch }, () => ({
        name: 'bench',
        data: makePayload(),
        opts: { removeOnComplete: true, removeOnFail: true },
      })),
    );
}
