import type { Meter } from '@opentelemetry/api';
import { parseGroups } from '../claim/inspection-replies.js';
import { delayedKeys } from '../delayed/delayed-keys.js';
import type { RedisClient } from '../redis/connection.js';
import { redisNow } from '../redis/server-time.js';
import { MESSAGING_SYSTEM } from '../telemetry/destination-attributes.js';

interface Sample {
  readonly stream: string;
  readonly group: string;
  readonly lag: number | null;
  readonly pending: number;
  readonly deadLetters: number;
  /** Delayed entries held for the stream, and of those due and not promoted yet (docs/scheduling.md). */
  readonly delayed: number | null;
  readonly delayedDue: number | null;
}

/**
 * The lag, pending, dead-letter and delayed gauges of a server's streams + groups. Redis is asked on a
 * timer (TIME, then XINFO GROUPS + XLEN + ZCARD + ZCOUNT per stream, every `intervalMs`), never per entry nor per
 * collection: the observable gauges report the last sample.
 */
export class GroupGauges {
  private samples: Sample[] = [];
  private readonly timer: NodeJS.Timeout;
  private sampling = false;

  constructor(
    meter: Meter,
    private readonly redis: RedisClient,
    private readonly streams: () => readonly { stream: string; group: string; deadLetterKey: string }[],
    intervalMs: number,
  ) {
    const lag = meter.createObservableGauge('redis_streams.group.lag', { unit: '{message}', description: 'Entries not yet delivered to the group (XINFO GROUPS lag, Redis 7.0+)' });
    const pending = meter.createObservableGauge('redis_streams.group.pending', { unit: '{message}', description: 'Entries delivered to the group and not yet acknowledged' });
    const deadLetters = meter.createObservableGauge('redis_streams.dead_letter.size', { unit: '{message}', description: 'Entries in the dead-letter stream of the stream' });
    const delayed = meter.createObservableGauge('redis_streams.delayed.size', { unit: '{message}', description: 'Delayed entries held for the stream (ZCARD of {stream}:delayed)' });
    const delayedDue = meter.createObservableGauge('redis_streams.delayed.due', {
      unit: '{message}',
      description: 'Delayed entries due (Redis clock) and not promoted into the stream yet: above 0 for long, no worker promotes them',
    });
    meter.addBatchObservableCallback((observer) => {
      for (const sample of this.samples) {
        const attributes = { 'messaging.system': MESSAGING_SYSTEM, 'messaging.destination.name': sample.stream, 'messaging.consumer.group.name': sample.group };
        if (sample.lag !== null) observer.observe(lag, sample.lag, attributes);
        observer.observe(pending, sample.pending, attributes);
        observer.observe(deadLetters, sample.deadLetters, attributes);
        if (sample.delayed !== null) observer.observe(delayed, sample.delayed, attributes);
        if (sample.delayedDue !== null) observer.observe(delayedDue, sample.delayedDue, attributes);
      }
    }, [lag, pending, deadLetters, delayed, delayedDue]);
    void this.sample();
    this.timer = setInterval(() => void this.sample(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One round of queries (skipped while the previous one still waits on Redis). */
  async sample(): Promise<void> {
    if (this.sampling) return;
    this.sampling = true;
    try {
      const next: Sample[] = [];
      // "Due" is judged on Redis' clock, as the promotion judges it.
      const now = await redisNow(this.redis);
      for (const { stream, group, deadLetterKey } of this.streams()) {
        const { schedule } = delayedKeys(stream);
        const [groups, deadLetters, held] = await Promise.all([
          this.redis.call('XINFO', 'GROUPS', stream),
          this.redis.xlen(deadLetterKey),
          // An ACL written before delayed entries (no +zcard/+zcount on them) costs these two gauges, not the others.
          Promise.all([this.redis.zcard(schedule), this.redis.zcount(schedule, '-inf', now)]).catch(() => [null, null] as const),
        ]);
        const info = parseGroups(groups).find((candidate) => candidate.name === group);
        if (info !== undefined) next.push({ stream, group, lag: info.lag, pending: info.pending, deadLetters, delayed: held[0], delayedDue: held[1] });
      }
      this.samples = next;
    } catch {
      // Redis unreachable: keep the last sample; health checks report the outage.
    } finally {
      this.sampling = false;
    }
  }
}
