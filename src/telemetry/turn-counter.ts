import type { Attributes, Counter } from '@opentelemetry/api';

/**
 * A counter whose adds are summed per attribute set and handed to the SDK once per turn of the
 * event loop: the SDK hashes the attributes of every call (sorted keys, JSON), which cost more per
 * entry than the count itself. Attribute sets must be the cached objects of
 * destination-attributes.ts (compared by identity). Exporters read every few seconds, so a count
 * arriving a turn later changes nothing they see.
 */
export class TurnCounter {
  private readonly pending = new Map<Attributes, number>();
  private scheduled = false;

  constructor(private readonly counter: Counter) {}

  add(count: number, attributes: Attributes): void {
    this.pending.set(attributes, (this.pending.get(attributes) ?? 0) + count);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flush).unref();
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    for (const [attributes, count] of this.pending) this.counter.add(count, attributes);
    this.pending.clear();
  };
}
