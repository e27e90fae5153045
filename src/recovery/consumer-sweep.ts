import type { StreamInspector } from '../claim/stream-inspector.js';
import type { RedisClient } from '../redis/connection.js';
import { reapConsumers } from './consumer-reaper.js';

export interface ConsumerSweepRequest {
  stream: string;
  group: string;
  /** This server's consumer: never removed. */
  self: string;
  /** Consumers idle at least this long (ms) and holding nothing are removed. */
  minIdleTime: number;
  /** The shutdown handoff consumer: removed as soon as it is drained, whatever its idle time. */
  handoffConsumer: string | undefined;
}

/**
 * Consumer clean-up for one stream + group. XINFO CONSUMERS picks candidates (nothing pending,
 * idle long enough); the owner-checked `reapConsumers` script then deletes each one only if it
 * still holds nothing at that moment, so a consumer that reads meanwhile keeps its entries.
 * Returns the names removed.
 */
export async function sweepConsumers(redis: RedisClient, inspector: StreamInspector, request: ConsumerSweepRequest): Promise<string[]> {
  const { stream, group, self, minIdleTime, handoffConsumer } = request;
  const consumers = await inspector.consumers(stream, group);
  const idle: string[] = [];
  const drainedHandoff: string[] = [];
  for (const consumer of consumers) {
    if (consumer.name === self || consumer.pending > 0) continue;
    if (consumer.name === handoffConsumer) drainedHandoff.push(consumer.name);
    else if (consumer.idleMs >= minIdleTime) idle.push(consumer.name);
  }
  const deleted: string[] = [];
  if (idle.length > 0) deleted.push(...(await reapConsumers(redis, { stream, group, consumers: idle, minIdleTime })).deleted);
  if (drainedHandoff.length > 0) deleted.push(...(await reapConsumers(redis, { stream, group, consumers: drainedHandoff })).deleted);
  return deleted;
}
