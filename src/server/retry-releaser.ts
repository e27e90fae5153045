import type { Logger } from '@nestjs/common';
import type { RedisClient } from '../redis/connection.js';
import { batchThisTick } from '../redis/tick-batching.js';
import { handlerErrorText } from '../recovery/handler-error-memory.js';
import { recoveryRunsFor, type ResolvedRecoveryOptions } from '../recovery/recovery-options.js';
import { releaseForRetry, type FailedEntry } from '../recovery/retry-release.js';
import type { ResolvedRetryPolicy } from '../recovery/retry-policy.js';
import type { InFlightEntry, StreamBinding } from './in-flight.js';
import { TickBatches } from './tick-batches.js';

/** What the releaser needs from the server's slot accounting. */
export interface RetrySlots {
  /** The entry's slot comes back within a round trip (readers wait for it rather than read less). */
  markReturning(entry: InFlightEntry): void;
  /** The entry left this consumer: its prefetch slot is free. */
  release(entry: InFlightEntry): void;
}

interface Failure {
  readonly entry: InFlightEntry;
  readonly failed: FailedEntry;
}

/**
 * Entries whose handler failed, released to the retry consumer with their wait (docs/recovery.md,
 * "Retry with backoff"). Like acks, the releases of a tick go out together: one owner-checked
 * script call per stream + group at the end of the tick. Only failures pay for it; a handler
 * without a retry policy (the default) is settled as before, and its entry stays with this
 * consumer until `minIdleTime`. An entry keeps its prefetch slot until its release was answered;
 * a failed release is reported and leaves it here (it comes back after `minIdleTime`).
 */
export class RetryReleaser {
  private readonly batches = new TickBatches<StreamBinding, Failure[]>(() => [], (binding, failures) => this.send(binding, failures));

  constructor(
    private readonly client: RedisClient,
    private readonly consumer: string,
    private readonly recovery: ResolvedRecoveryOptions,
    private readonly slots: RetrySlots,
    private readonly report: (error: Error) => void,
    private readonly logger: Logger,
  ) {}

  /** The policy of a binding: its `extras.retry`, else the server's; none where recovery does not run (nothing would claim its entries back). */
  policyOf(binding: StreamBinding): ResolvedRetryPolicy | undefined {
    if (!recoveryRunsFor(this.recovery, binding) || binding.retry === false) return undefined;
    return binding.retry ?? this.recovery.retry;
  }

  /**
   * Queues the release of a failed entry. False when no policy applies (or it threw): the caller
   * settles the entry as before. True: the entry is settled here, its slot freed once released.
   */
  release(entry: InFlightEntry, error: unknown): boolean {
    const policy = this.policyOf(entry.binding);
    if (policy === undefined || entry.settled) return false;
    const limit = entry.binding.maxDeliveries ?? this.recovery.maxDeliveries;
    let delayMs: number;
    try {
      // Exhausted: no wait, recovery dead-letters it on its next tick (with this error).
      delayMs = entry.deliveryCount >= limit ? 0 : policy.delayFor(entry.deliveryCount, error);
    } catch (failure) {
      this.report(new Error(`retry policy of "${entry.binding.pattern}" failed for entry ${entry.id}; it stays pending here: ${(failure as Error).message}`));
      return false;
    }
    this.queue(entry, delayMs, handlerErrorText(error));
    return true;
  }

  /**
   * Queues the release of an entry nacked with a delay (`ctx.nack({ delay })`): the same move as a
   * failure's, with the handler's wait; an exhausted entry (count at `maxDeliveries`) gets none and
   * is dead-lettered by the next tick. False when it is settled already, or where recovery does not
   * run (nothing would claim it back): the caller leaves it with this consumer.
   */
  releaseAfter(entry: InFlightEntry, delayMs: number, reason: string): boolean {
    if (entry.settled || !recoveryRunsFor(this.recovery, entry.binding)) return false;
    const limit = entry.binding.maxDeliveries ?? this.recovery.maxDeliveries;
    this.queue(entry, entry.deliveryCount >= limit ? 0 : delayMs, reason);
    return true;
  }

  /**
   * Queues the hold of an entry a per-key rate limit had no token for: released to the retry
   * consumer for `delayMs` like a nack with a delay, but uncounted (its delivery count is set back,
   * so the claim that returns it leaves the count as it was). False when it is settled already, or
   * where recovery does not run (nothing would claim it back): the caller holds it here instead.
   */
  holdUncounted(entry: InFlightEntry, delayMs: number, reason: string): boolean {
    if (entry.settled || !recoveryRunsFor(this.recovery, entry.binding)) return false;
    this.queue(entry, delayMs, reason, true);
    return true;
  }

  private queue(entry: InFlightEntry, delayMs: number, error: string, uncounted = false): void {
    entry.settled = true;
    this.slots.markReturning(entry);
    const failed: FailedEntry = { id: entry.id, deliveryCount: entry.deliveryCount, delayMs, error, ...(uncounted ? { uncounted } : {}) };
    this.batches.of(entry.binding).push({ entry, failed });
  }

  /** Sends what is queued and waits for every release in progress (close()). */
  drain(): Promise<void> {
    return this.batches.drain();
  }

  private async send(binding: StreamBinding, failures: Failure[]): Promise<void> {
    try {
      batchThisTick(this.client);
      const { released, lost } = await releaseForRetry(this.client, {
        stream: binding.stream,
        group: binding.group,
        consumer: this.consumer,
        retryConsumer: this.recovery.retryConsumer,
        entries: failures.map((failure) => failure.failed),
      });
      if (lost.length > 0) {
        this.logger.warn(
          `${lost.length} failed entries of "${binding.stream}" (group "${binding.group}") were no longer ours to release for a retry: ${lost.map((item) => `${item.id} (${item.reason})`).join(', ')}`,
        );
      }
      this.logger.debug?.(`released ${released.length} failed entries of "${binding.stream}" for a retry`);
    } catch (error) {
      this.report(
        new Error(
          `release of ${failures.length} failed entries of "${binding.stream}" (group "${binding.group}") for a retry failed; they stay pending here until minIdleTime: ${(error as Error).message}`,
        ),
      );
    }
    for (const { entry } of failures) this.slots.release(entry);
  }
}
