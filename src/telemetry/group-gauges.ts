import type { Meter } from '@opentelemetry/api';
import { parseGroups } from '../claim/inspection-replies.js';
import type { RedisClient } from '../redis/connection.js';
import { MESSAGING_SYSTEM } from './destination-attributes.js';

interface Sample {
  readonly stream: string;
  readonly group: string;
  readonly lag: number | null;
  readonly pending: number;
  readonly deadLetters: number;
}

/**
 * The lag, pending and dead-letter gauges of a server's streams + groups. Redis is asked on a
 * timer (XINFO GROUPS + XLEN per stream, every `intervalMs`), never per entry nor per
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
    meter.addBatchObservableCallback((observer) => {
      for (const sample of this.samples) {
        const attributes = { 'messaging.system': MESSAGING_SYSTEM, 'messaging.destination.name': sample.stream, 'messaging.consumer.group.name': sample.group };
        if (sample.lag !== null) observer.observe(lag, sample.lag, attributes);
        observer.observe(pending, sample.pending, attributes);
        observer.observe(deadLetters, sample.deadLetters, attributes);
      }
    }, [lag, pending, deadLetters]);
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
      for (const { stream, group, deadLetterKey } of this.streams()) {
        const [groups, deadLetters] = await Promise.all([this.redis.call('XINFO', 'GROUPS', stream), this.redis.xlen(deadLetterKey)]);
        const info = parseGroups(groups).find((candidate) => candidate.name === group);
        if (info !== undefined) next.push({ stream, group, lag: info.lag, pending: info.pending, deadLetters });
      }
      this.samples = next;
    } catch {
      // Redis unreachable: keep the last sample; health checks report the outage.
    } finally {
      this.sampling = false;
    }
  }
}
