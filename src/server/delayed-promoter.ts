import type { Logger } from '@nestjs/common';
import { isNoPermission } from '../redis/acl-refusal.js';
import { delayedKeys } from '../delayed/delayed-keys.js';
import { promoteDue, type PromotionResult } from '../delayed/promote.js';
import type { RedisClient } from '../redis/connection.js';
import { batchThisTick } from '../redis/tick-batching.js';
import type { ResolvedDelayedOptions } from './delayed-options.js';

/** Promotion calls per stream in flight at once while pages come back full. */
const PAGES_IN_FLIGHT = 3;

/**
 * Moves the due delayed entries of the streams this worker reads into them (docs/scheduling.md).
 * Every worker of a stream runs one, so no extra process is needed; the script makes each entry
 * move once however many race. A round calls promote.lua for every stream at once (one socket
 * write), again for a stream while a call moved a full batch (at most `maxPages` calls, three in
 * flight; one first for a stream whose last round ended with nothing more due), and the next round comes when the earliest entry seen is due, at the latest after `interval`, at once
 * when some stream had more due than the round could move, and sooner when {@link wake} tells of a
 * hold due before it (the wake-up channel, delayed-wake-listener.ts). The timer is unref'd;
 * `stop()` clears it.
 */
export class DelayedPromoter {
  private timer: NodeJS.Timeout | undefined;
  /** When the armed timer fires (performance.now()). */
  private timerAt = Infinity;
  private roundInFlight = false;
  /** The soonest wake-up asked for while a round was in flight (performance.now()): the round may not have seen its hold. */
  private wokenAt = Infinity;
  private stopped = false;
  /** The last failure's text: one log line per outage, not one per round. */
  private lastFailure: string | undefined;
  /** Streams whose last call moved a full batch: their next round starts with three calls in flight, the others with one. */
  private readonly behind = new Set<string>();
  /** Streams whose promotion the ACL refuses: warned once, until a round succeeds again. */
  private readonly refused = new Set<string>();

  constructor(
    private readonly client: RedisClient,
    private readonly streams: readonly string[],
    private readonly options: ResolvedDelayedOptions,
    private readonly logger: Logger,
    private readonly report: (error: Error) => void,
  ) {}

  /**
   * Arms the first round: at once, or, when a wake-up subscription asks for it (`wake(0)` once
   * subscribed, delayed-wake-listener.ts), then and at the latest after `firstRoundInMs`: one
   * round at start instead of two.
   */
  start(firstRoundInMs = 0): void {
    if (this.streams.length === 0 || this.stopped) return;
    this.schedule(firstRoundInMs);
  }

  /**
   * Stops the rounds. A call in flight is not waited for: the script runs whole or not at all in
   * Redis whatever becomes of its reply, and with Redis down or paused it would hold `close()`.
   */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * A hold is due in `inMs`: the next round comes then if it would come later. During a round, the
   * round after it comes no later than that (the round's script may have run before the hold was
   * written). Each call brings at most one round forward; the script moves each entry once.
   */
  wake(inMs: number): void {
    if (this.stopped) return;
    const at = performance.now() + inMs;
    if (this.roundInFlight) {
      this.wokenAt = Math.min(this.wokenAt, at);
      return;
    }
    if (this.timer === undefined || this.timerAt <= at) return; // not started, or a round comes sooner
    clearTimeout(this.timer);
    this.schedule(inMs);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timerAt = performance.now() + delayMs;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.roundInFlight = true;
      void this.promoteAll().then((nextAt) => {
        this.roundInFlight = false;
        const at = Math.min(nextAt, this.wokenAt);
        this.wokenAt = Infinity;
        this.schedule(Math.max(0, at - performance.now()));
      });
    }, delayMs);
    this.timer.unref();
  }

  /**
   * One round over every stream; resolves with when the next one comes (performance.now()). The
   * next due time counts from when the call that saw it was sent, not from its reply: the reply's
   * transit, the other streams' calls and a busy event loop do not make the next entry late (a
   * round that comes a little early finds it not due yet and says so: another round 1 ms on).
   */
  private async promoteAll(): Promise<number> {
    let nextAt = performance.now() + this.options.intervalMs;
    const failures: string[] = [];
    await Promise.all(
      this.streams.map(async (stream) => {
        try {
          const last = await this.promoteStream(stream);
          this.refused.delete(stream);
          if (last === undefined) return; // stopped before a call was made
          const { result, sentAt } = last;
          if (result.full) nextAt = 0;
          else if (result.nextDueMs !== undefined) nextAt = Math.min(nextAt, sentAt + Math.max(1, result.nextDueMs - result.nowMs));
        } catch (error) {
          if (isNoPermission(error)) this.warnRefused(stream, error as Error);
          else failures.push(`"${stream}": ${(error as Error).message}`);
        }
      }),
    );
    this.reportFailures(failures);
    return nextAt;
  }

  /**
   * Calls the script while it moves full batches, up to `maxPages` times, {@link PAGES_IN_FLIGHT}
   * calls at a time (Redis runs them one after the other, each taking the next due page; the
   * overlap hides the round trip); returns the last call's result and when it was sent
   * (`undefined` once stopped). A stream whose last round ended with nothing more due (the usual
   * round: nothing or a few entries due) gets one call first, the others only if it moved a full
   * batch: three calls for an empty schedule would be two wasted script runs per round.
   */
  private async promoteStream(stream: string): Promise<{ result: PromotionResult; sentAt: number } | undefined> {
    const { maxPages, batch } = this.options;
    let started = 0;
    let last: { result: PromotionResult; sentAt: number } | undefined;
    let more = true;
    const call = async (): Promise<void> => {
      started++;
      batchThisTick(this.client);
      const sentAt = performance.now();
      const result = await promoteDue(this.client, stream, batch, { listIds: false });
      this.warnSkipped(stream, result);
      last = { result, sentAt };
      if (!result.full) more = false;
    };
    const pages = async (): Promise<void> => {
      while (more && started < maxPages && !this.stopped) await call();
    };
    const inFlight = (): number => Math.min(PAGES_IN_FLIGHT, maxPages - started);
    // One call first unless the stream was behind; more only once a call moved a full batch.
    if (!this.behind.has(stream) && !this.stopped) await call();
    if (more && started < maxPages) await Promise.all(Array.from({ length: inFlight() }, pages));
    if (last?.result.full === true) this.behind.add(stream);
    else this.behind.delete(stream);
    return last;
  }

  private warnSkipped(stream: string, result: PromotionResult): void {
    for (const { hold, status } of result.skipped) {
      if (status === 'missing') continue; // its body was removed by hand (CLI, operator): nothing to deliver
      this.logger.warn(
        status === 'dropped'
          ? `delayed entry ${hold} of "${stream}" was emitted with noMkStream and the stream does not exist: nothing written`
          : `delayed entry ${hold} of "${stream}" has a body the promotion cannot read: unscheduled, its body kept in the bodies hash`,
      );
    }
  }

  /**
   * ACL rules written before delayed entries existed: this worker cannot promote the stream's
   * (another worker with the rules may); one warning per stream, not an error per round.
   */
  private warnRefused(stream: string, error: Error): void {
    if (this.refused.has(stream) || this.stopped) return;
    this.refused.add(stream);
    const { schedule, bodies } = delayedKeys(stream);
    this.logger.warn(
      `cannot promote delayed entries of "${stream}" (${error.message}): this worker leaves them held; ` +
        `grant +zrangebyscore +zrange +hget +hmget +zrem +hdel (recurring entries: +zscore +zadd +hset) on "${schedule}" and "${bodies}" (docs/security.md)`,
    );
  }

  private reportFailures(failures: string[]): void {
    // Calls cut short by close() are no failure to report.
    if (this.stopped) return;
    if (failures.length === 0) {
      this.lastFailure = undefined;
      return;
    }
    const text = `promotion of delayed entries failed (they stay held; retried next round): ${failures.join('; ')}`;
    if (text === this.lastFailure) return;
    this.lastFailure = text;
    this.report(new Error(text));
  }
}

