import { BaseRpcContext, Server, type CustomTransportStrategy, type MessageHandler } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { isObservable, lastValueFrom } from 'rxjs';
import { dataField, ensureGroup, type StreamReply } from './raw-loop.js';

export interface NestRawLoopOptions {
  redisUrl: string;
  key: string;
  group: string;
  consumer: string;
  count?: number;
}

/**
 * The raw read/ack loop of raw-loop.ts as a Nest transport, and nothing more: what Nest's `Server`
 * gives any transport (the handler Nest built for the `@EventPattern`: its pipes, guards,
 * interceptors, filters and async chain), called once per entry with the decoded payload and a
 * plain `BaseRpcContext`. The loop reads COUNT 100, starts every entry's handler, waits for all of
 * them (an observable result is consumed to its end), then XACKs the batch and reads again. None of
 * our transport's logic (prefetch slots, handler lanes, ack batcher, context, decoder) is involved, so the
 * distance from the raw loop to this contender is Nest's pipeline, and from this one to ours is ours.
 */
export class NestRawLoopServer extends Server implements CustomTransportStrategy {
  /** As in our server: we await handlers, so Nest builds the same event pipeline for both. */
  override readonly propagatesEventHandlerErrors = true;
  private readonly redis: Redis;
  private running = false;
  private done?: Promise<void>;

  constructor(private readonly options: NestRawLoopOptions) {
    super();
    this.redis = new Redis(options.redisUrl, { lazyConnect: true });
  }

  async listen(callback: (error?: unknown) => void): Promise<void> {
    try {
      const handler = this.getHandlerByPattern(this.options.key);
      if (!handler) throw new Error(`no handler for ${this.options.key}`);
      await this.redis.connect();
      await ensureGroup(this.redis, this.options.key, this.options.group);
      this.running = true;
      this.done = this.loop(handler);
      callback();
    } catch (error) {
      callback(error);
    }
  }

  async close(): Promise<void> {
    this.running = false;
    await this.done;
    if (this.redis.status === 'ready') await this.redis.quit();
    else this.redis.disconnect();
  }

  on(): never {
    throw new Error('NestRawLoopServer has no events');
  }

  unwrap<T>(): T {
    return this.redis as T;
  }

  private async loop(handler: MessageHandler): Promise<void> {
    const { redis } = this;
    const { key, group, consumer, count = 100 } = this.options;
    while (this.running) {
      const reply = (await redis.xreadgroup(
        'GROUP', group, consumer, 'COUNT', count, 'BLOCK', 200, 'STREAMS', key, '>',
      )) as StreamReply;
      const entries = reply?.[0]?.[1];
      if (!entries || entries.length === 0) continue;
      const ids: string[] = [];
      const handled: Promise<unknown>[] = [];
      for (let i = 0; i < entries.length; i++) {
        const [id, fields] = entries[i] as [string, string[]];
        ids.push(id);
        handled.push(settle(handler(JSON.parse(dataField(fields)), new BaseRpcContext([key, id]))));
      }
      await Promise.all(handled);
      await redis.xack(key, group, ...ids);
    }
  }
}

/** What the handler returned, awaited; an observable is consumed to its end (as Nest's Kafka server does). */
async function settle(result: unknown): Promise<unknown> {
  const value = await result;
  return isObservable(value) ? lastValueFrom(value, { defaultValue: undefined }) : value;
}
