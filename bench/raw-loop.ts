import type { Redis } from 'ioredis';

export type StreamReply = [key: string, entries: [id: string, fields: string[]][]][] | null;

/** XGROUP CREATE at `0` with MKSTREAM; an existing group is fine. */
export async function ensureGroup(redis: Redis, key: string, group: string): Promise<void> {
  try {
    await redis.xgroup('CREATE', key, group, '0', 'MKSTREAM');
  } catch (error) {
    if (!String((error as Error).message).includes('BUSYGROUP')) throw error;
  }
}

/**
 * The raw ioredis consumer every stream scenario is compared with: XREADGROUP COUNT 100 (blocking),
 * JSON.parse of the `data` field, the handler, then one XACK for the batch, in a loop.
 */
export class RawConsumerLoop {
  private running = false;
  private done?: Promise<void>;

  constructor(
    protected readonly redis: Redis,
    protected readonly key: string,
    private readonly group: string,
    private readonly consumer: string,
    protected readonly handle: (payload: unknown) => void,
    private readonly count = 100,
    /** Acknowledge with `XACKDEL … KEEPREF` (Redis 8.2+): the entries leave the stream too. */
    private readonly ackDelete = false,
  ) {}

  start(): void {
    this.running = true;
    this.done = this.loop();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }

  private async loop(): Promise<void> {
    const { redis, key, group } = this;
    while (this.running) {
      const reply = await this.read(this.count);
      const entries = reply?.[0]?.[1];
      if (!entries || entries.length === 0) continue;
      const ids: string[] = [];
      for (let i = 0; i < entries.length; i++) {
        const [id, fields] = entries[i] as [string, string[]];
        ids.push(id);
        this.handleEntry(id, fields);
      }
      if (this.ackDelete) await redis.call('XACKDEL', key, group, 'KEEPREF', 'IDS', ids.length, ...ids);
      else await redis.xack(key, group, ...ids);
    }
  }

  /** One blocking read of up to `count` new entries. The rate-limit floor takes tokens first (workers/raw-rate-floor-worker.ts). */
  protected read(count: number): Promise<StreamReply> {
    return this.redis.xreadgroup('GROUP', this.group, this.consumer, 'COUNT', count, 'BLOCK', 200, 'STREAMS', this.key, '>') as Promise<StreamReply>;
  }

  /** One entry of a read: its `data` parsed, to the handler. The telemetry floor wraps it (workers/raw-otel-worker.ts). */
  protected handleEntry(_id: string, fields: string[]): void {
    this.handle(JSON.parse(dataField(fields)));
  }
}

export function dataField(fields: string[]): string {
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'data') return fields[i + 1] as string;
  }
  return 'null';
}
