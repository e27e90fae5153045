import { Logger } from '@nestjs/common';
import { StreamInspector } from '../claim/stream-inspector.js';
import type { RedisClient } from '../redis/connection.js';
import { deadLetterKey as defaultDeadLetterKey } from '../redis/keys.js';
import { sweepConsumers } from './consumer-sweep.js';
import { moveToDeadLetter, RedisStreamsDeadLetterError, type DeadLetterMoveResult } from './dead-letter-move.js';
import { listenersFor } from './dead-letter-listeners.js';
import { errorText, HandlerErrorMemory, handlerErrorText } from './handler-error-memory.js';
import { LeaseKeeper } from './lease-keeper.js';
import { PendingRecoverer, type RecoveryServices, type RecoveryTarget } from './pending-recoverer.js';
import type { DeadLetterNotice, EntriesLostNotice, RecoveryEmit } from './recovery-events.js';
import type { RecoveryHost } from './recovery-host.js';
import { derivedTickInterval, type ResolvedRecoveryOptions } from './recovery-options.js';
import { RecentIds } from './recent-ids.js';
import { recoveryRegistry } from './recovery-registry.js';
import { addTick, emptyStats, emptyTickResult, type RecoveryStats, type RecoveryTickResult } from './recovery-stats.js';
import { TrimWatch } from './trim-watch.js';
import { retryTickInterval } from './retry-ticks.js';
import { MAX_TIMER_MS } from '../validation.js';

/** Counters a dead-letter move adds to (a tick's result, or the totals for moves outside ticks). */
type MoveTally = Pick<RecoveryTickResult, 'deadLettered' | 'deletedPending'>;

interface TargetState {
  readonly recoverer: PendingRecoverer;
  readonly trimWatch: TrimWatch;
}

/**
 * Recovery of one running server: a timer of ticks (each: reclaim idle entries, dead-letter
 * poison ones, report trim loss, now and then remove dead consumers), lease renewal of the
 * server's in-flight entries, and dead-lettering of undecodable entries. Created by the server at
 * `listen()` and stopped at `close()`; ticks never overlap.
 */
export class RecoveryScheduler {
  private readonly logger = new Logger('RedisStreamsRecovery');
  private readonly errors = new HandlerErrorMemory();
  private readonly counters: RecoveryStats = emptyStats();
  /** Pending ids already reported lost: the restart re-read and a tick's claim may both find one. */
  private readonly reportedLost = new RecentIds();
  /** Ids already reported too large to dead-letter (reported once, not on every tick). */
  private readonly reportedTooLarge = new RecentIds();
  private targets: TargetState[] = [];
  private inspector: StreamInspector | undefined;
  private leases: LeaseKeeper | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Time between timer ticks when some handler has a retry policy (short ticks of the retry consumer's entries), else undefined. */
  private retryInterval: number | undefined;
  private timerTicks = 0;
  private tail: Promise<unknown> = Promise.resolve();
  private state: 'idle' | 'running' | 'draining' | 'stopped' = 'idle';
  /** Time between ticks: `recovery.interval`, or a quarter of the smallest `minIdleTime` recovered. */
  private tickInterval: number;

  constructor(
    readonly host: RecoveryHost,
    readonly options: ResolvedRecoveryOptions,
    private readonly emit: RecoveryEmit = () => undefined,
  ) {
    this.tickInterval = options.interval;
  }

  /** Time between ticks, in ms (known once started: a handler's smaller `extras.minIdleTime` shortens it). */
  get interval(): number {
    return this.tickInterval;
  }

  /** Streams + groups this scheduler recovers, with their effective `minIdleTime` / `maxDeliveries`. */
  get recovered(): readonly RecoveryTarget[] {
    return this.targets.map((state) => state.recoverer.target);
  }

  /** Starts ticks (unless `enabled: false`) and leases (unless `leases: false`). Call after the server listens. */
  start(): void {
    if (this.state !== 'idle') return;
    this.state = 'running';
    const redis = this.host.commandConnection();
    this.inspector = new StreamInspector(redis);
    const services = this.services(redis, this.inspector);
    const handled = this.host.handledStreams();
    this.targets = handled
      .filter((stream) => stream.recovery !== false)
      .map((stream) => {
        const target: RecoveryTarget = {
          stream: stream.stream,
          group: stream.group,
          minIdleTime: stream.minIdleTime ?? this.options.minIdleTime,
          maxDeliveries: stream.maxDeliveries ?? this.options.maxDeliveries,
          retry: stream.retry === false ? undefined : (stream.retry ?? this.options.retry),
        };
        return { recoverer: new PendingRecoverer(target, services), trimWatch: new TrimWatch(target.stream, target.group, this.inspector as StreamInspector) };
      });
    // A handler's smaller extras.minIdleTime must not wait for ticks paced by the server-wide one.
    if (!this.options.intervalGiven && this.targets.length > 0) {
      this.tickInterval = derivedTickInterval(Math.min(...this.targets.map((state) => state.recoverer.target.minIdleTime)));
    }
    // The keeper also serves `ctx.extendLease()`, which works with `leases: false` (no timer then).
    if (handled.length > 0) {
      const smallestIdle = Math.min(...handled.map((stream) => stream.minIdleTime ?? this.options.minIdleTime));
      const interval = this.options.leaseInterval ?? Math.min(MAX_TIMER_MS, Math.max(1, Math.floor(smallestIdle / 3)));
      this.leases = new LeaseKeeper(
        this.host,
        interval,
        this.logger,
        (count) => (this.counters.leasesRenewed += count),
        (notice) => {
          this.counters.leasesLost++;
          this.emit('leaseLost', notice);
        },
        (error) => this.reportError(error),
      );
      if (this.options.leases) this.leases.start();
      const keeper = this.leases;
      this.host.setLeaseExtender(({ stream, group, id }) => keeper.renew(stream, group, [id]));
    }
    recoveryRegistry.add(this);
    this.retryInterval = retryTickInterval(this.targets.map((state) => state.recoverer.target.retry), this.tickInterval);
    if (this.options.enabled && this.targets.length > 0) this.schedule();
  }

  /**
   * Stops taking new work (the tick timer, `runOnce()`) and waits for a tick in progress. Leases
   * keep running so handlers still finishing during shutdown keep their entries; `stop()` ends them.
   */
  async stopTicks(): Promise<void> {
    if (this.state === 'running') this.state = 'draining';
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.tail.catch(() => undefined);
  }

  /** Stops everything (ticks, leases) and leaves the registry. */
  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    await this.stopTicks();
    this.state = 'stopped';
    recoveryRegistry.delete(this);
    this.host.setLeaseExtender(undefined);
    await this.leases?.stop();
  }

  /** Runs one tick now (after a tick in progress). Works with `enabled: false`. */
  runOnce(): Promise<RecoveryTickResult> {
    return this.enqueue(true);
  }

  /** Runs a tick after the one in progress: `full` over whole pending lists, else only over the retry consumer's entries. */
  private enqueue(full: boolean): Promise<RecoveryTickResult> {
    if (this.state !== 'running') return Promise.resolve(emptyTickResult());
    const run = this.tail.catch(() => undefined).then(() => this.tick(full));
    this.tail = run;
    return run;
  }

  /** Counters since start. */
  stats(): RecoveryStats {
    return { ...this.counters };
  }

  /** The dead-letter stream key of `stream` under these options. */
  deadLetterKeyFor(stream: string): string {
    return (this.options.deadLetterKey ?? defaultDeadLetterKey)(stream);
  }

  /** Remembers a handler failure so a later dead letter can carry it (the server calls this). */
  recordHandlerError(stream: string, group: string, id: string, error: unknown): void {
    this.errors.record(stream, group, id, handlerErrorText(error));
  }

  /**
   * Dead-letters entries this consumer re-read from its own pending list (a restart under the same
   * name) whose Redis delivery count now exceeds `maxDeliveries`: they are not run again.
   * `reReadAt`: when the re-read was answered; an entry touched since (claimed, renewed) is left alone.
   */
  async deadLetterExhausted(stream: string, group: string, ids: string[], reReadAt?: number): Promise<void> {
    // A tick may have claimed one into this consumer before the re-read (which raised its count)
    // and not yet handed it to the handlers: once the tick is done, one held here is running.
    await this.tail.catch(() => undefined);
    // Stopped meanwhile: they stay pending, and the next start's re-read finds them again.
    if (this.state === 'stopped') return;
    ids = ids.filter((id) => !this.host.isInFlight(stream, group, id));
    if (ids.length === 0) return;
    // Redis reset their idle time at the re-read, before `reReadAt`: less idle now means touched since.
    const minIdleTime = reReadAt === undefined ? 0 : Math.max(0, Date.now() - reReadAt - 1);
    const errors: Record<string, string> = {};
    for (const id of ids) {
      const text = this.errors.get(stream, group, id);
      if (text !== undefined) errors[id] = text;
    }
    try {
      await this.moveAndReport(
        this.host.commandConnection(),
        { stream, group, ids, reason: 'max_deliveries', errors, expectedConsumer: this.host.consumer, minIdleTime },
        this.counters,
      );
    } catch (error) {
      this.counters.errors++;
      this.reportError(new Error(`dead-lettering ${ids.length} exhausted entries of "${stream}" failed; they stay pending: ${(error as Error).message}`));
    }
  }

  /**
   * Pending entries of this group whose body is gone (trimmed, XDEL'ed): acks them away, counts
   * and reports them, once per process (the restart re-read and a tick's claim can both find one).
   */
  async ackLost(stream: string, group: string, ids: readonly string[], tally: MoveTally = this.counters): Promise<void> {
    // Marked before the XACK's round trip, so a second finder meanwhile skips them.
    const fresh = this.reportedLost.addNew(stream, group, ids);
    if (fresh.length === 0) return;
    try {
      await this.host.commandConnection().xack(stream, group, ...fresh);
    } catch (error) {
      this.reportedLost.forget(stream, group, fresh);
      throw error;
    }
    tally.deletedPending += fresh.length;
    this.reportLost({ stream, group, reason: 'trimmed_pending', count: fresh.length, ids: fresh.slice(0, 1000) });
  }

  /**
   * Dead-letters an undecodable entry this consumer holds (reason `decode_error`) on its first
   * delivery. Resolves true when it was moved; on failure it stays pending (logged).
   */
  async deadLetterUndecodable(stream: string, group: string, id: string, error: unknown): Promise<boolean> {
    try {
      const result = await this.moveAndReport(
        this.host.commandConnection(),
        { stream, group, ids: [id], reason: 'decode_error', error: errorText(error), expectedConsumer: this.host.consumer },
        { deadLettered: 0, deletedPending: 0 }, // counted as decodeErrors
      );
      const moved = result.moved.length > 0;
      if (moved) this.counters.decodeErrors++;
      return moved;
    } catch (error) {
      this.reportError(new Error(`dead-lettering undecodable entry ${id} of "${stream}" failed; it stays pending: ${(error as Error).message}`));
      return false;
    }
  }

  // ---- ticks ----

  /**
   * Every `interval` a full tick. With retry policies the timer fires every `retryInterval`
   * instead, and the ticks in between look only at the retry consumer's entries.
   */
  private schedule(): void {
    const interval = this.tickInterval;
    const every = this.retryInterval ?? interval;
    const fullEvery = Math.max(1, Math.round(interval / every));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerTicks++;
      void this.enqueue(this.timerTicks % fullEvery === 0).finally(() => {
        if (this.state === 'running') this.schedule();
      });
    }, every);
    this.timer.unref();
  }

  private async tick(full: boolean): Promise<RecoveryTickResult> {
    const result = emptyTickResult();
    const number = this.counters.ticks + 1;
    const { trimCheckEvery, reap } = this.options;
    for (const { recoverer, trimWatch } of this.targets) {
      if (this.state !== 'running') break;
      const { stream, group } = recoverer.target;
      if (!full) {
        if (recoverer.target.retry !== undefined) {
          await this.step(result, `retries of "${stream}" (group "${group}")`, () => recoverer.tick(result, true));
        }
        continue;
      }
      await this.step(result, `recovery of "${stream}" (group "${group}")`, () => recoverer.tick(result));
      if (trimCheckEvery > 0 && number % trimCheckEvery === 0) {
        await this.step(result, `trim check of "${stream}" (group "${group}")`, async () => {
          const notice = await trimWatch.check();
          if (notice !== undefined) {
            result.trimmedUndelivered += notice.count;
            this.reportLost(notice);
          }
        });
      }
      if (reap !== undefined && number % reap.every === 0) {
        await this.step(result, `consumer clean-up of "${stream}" (group "${group}")`, async () => {
          const removed = await sweepConsumers(this.host.commandConnection(), this.inspector as StreamInspector, {
            stream,
            group,
            self: this.host.consumer,
            minIdleTime: reap.minIdleTime,
            handoffConsumer: this.host.handoffConsumerName?.(),
          });
          if (removed.length > 0) {
            result.consumersReaped += removed.length;
            this.logger.log(`removed ${removed.length} idle consumers without pending entries from "${stream}" (group "${group}"): ${removed.join(', ')}`);
          }
        });
      }
    }
    addTick(this.counters, result, full);
    return result;
  }

  private async step(result: RecoveryTickResult, what: string, run: () => Promise<void>): Promise<void> {
    try {
      await run();
    } catch (error) {
      result.errors++;
      this.reportError(new Error(`${what} failed: ${(error as Error).message}`));
    }
  }

  // ---- reporting ----

  private services(redis: RedisClient, inspector: StreamInspector): RecoveryServices {
    return {
      host: this.host,
      redis,
      inspector,
      logger: this.logger,
      pageSize: this.options.pageSize,
      maxPages: this.options.maxPages,
      retryConsumer: this.options.retryConsumer,
      deadLetter: (request, tally) => {
        const errors: Record<string, string> = {};
        for (const id of request.ids) {
          const text = this.errors.get(request.stream, request.group, id);
          if (text !== undefined) errors[id] = text;
        }
        // Retry records hold the last error wherever it happened (this process's memory only its own).
        return this.moveAndReport(redis, { ...request, errors: { ...errors, ...request.errors } }, tally);
      },
      ackLost: (stream, group, ids, tally) => this.ackLost(stream, group, ids, tally),
      reportRecovered: (stream, group, ids) => {
        this.logger.log(`recovered ${ids.length} idle entries of "${stream}" (group "${group}"): ${preview(ids)}`);
        this.emit('recovered', { stream, group, ids });
      },
      reportError: (error) => this.reportError(error),
    };
  }

  /**
   * Moves, then reports every dead letter written (event, `onDeadLetter`, `tally`), also when the
   * move failed part-way: the ids moved before the failure are reported, then the error is rethrown.
   */
  private async moveAndReport(
    redis: RedisClient,
    request: {
      stream: string;
      group: string;
      ids: string[];
      reason: string;
      error?: string;
      errors?: Record<string, string>;
      expectedConsumer?: string;
      minDeliveries?: number;
      minIdleTime?: number;
    },
    tally: MoveTally,
  ): Promise<DeadLetterMoveResult> {
    const deadLetterKey = this.deadLetterKeyFor(request.stream);
    let result: DeadLetterMoveResult;
    let failure: RedisStreamsDeadLetterError | undefined;
    try {
      const deleteEntry = this.host.deletePolicyFor?.(request.stream, request.group);
      result = await moveToDeadLetter(redis, {
        ...request,
        deadLetterKey,
        maxLen: this.options.deadLetterMaxLen,
        ...(deleteEntry === undefined ? {} : { deleteEntry: deleteEntry === 'ACKED' ? 'acked' : 'keepref' }),
      });
    } catch (error) {
      if (!(error instanceof RedisStreamsDeadLetterError)) throw error;
      failure = error;
      result = error.partial;
    }
    tally.deadLettered += result.moved.length;
    tally.deletedPending += result.tombstoned.length;
    const tombstones: string[] = [];
    const tooLarge: string[] = [];
    for (const outcome of result.outcomes) {
      if (outcome.status === 'too_large') tooLarge.push(outcome.id);
      if (outcome.status !== 'moved' && outcome.status !== 'tombstone') continue;
      const tombstone = outcome.status === 'tombstone';
      if (tombstone) tombstones.push(outcome.id);
      const notice: DeadLetterNotice = {
        stream: request.stream,
        group: request.group,
        id: outcome.id,
        reason: tombstone ? 'trimmed' : request.reason,
        error: tombstone ? '' : (request.errors?.[outcome.id] ?? request.error ?? ''),
        deliveryCount: outcome.deliveryCount,
        consumer: outcome.consumer ?? '',
        deadLetterKey,
        deadLetterId: outcome.deadLetterId ?? '',
        tombstone,
      };
      this.errors.forget(request.stream, request.group, outcome.id);
      if (!tombstone) {
        this.logger.warn(
          `dead-lettered entry ${outcome.id} of "${request.stream}" (group "${request.group}") to "${deadLetterKey}": ${notice.reason} after ${notice.deliveryCount} deliveries${notice.error ? `; last error: ${notice.error}` : ''}`,
        );
      }
      this.emit('deadLetter', notice);
      await this.callOnDeadLetter(notice);
    }
    // The restart re-read may have seen (and reported) a tombstoned id before the script acked it.
    const lost = this.reportedLost.addNew(request.stream, request.group, tombstones);
    if (lost.length > 0) {
      this.reportLost({ stream: request.stream, group: request.group, reason: 'trimmed_pending', count: lost.length, ids: lost });
    }
    const newTooLarge = this.reportedTooLarge.addNew(request.stream, request.group, tooLarge);
    if (newTooLarge.length > 0) {
      this.counters.errors++;
      this.reportError(
        new Error(
          `${newTooLarge.length} entries of "${request.stream}" (group "${request.group}") have too many fields to be dead-lettered by a script; they stay pending and are not run again: ${preview(newTooLarge)}`,
        ),
      );
    }
    if (failure !== undefined) throw failure;
    return result;
  }

  /** The `onDeadLetter` option, then the app's `@OnDeadLetter()` methods that want this stream; each awaited, errors logged. */
  private async callOnDeadLetter(notice: DeadLetterNotice): Promise<void> {
    const hook = this.options.onDeadLetter;
    if (hook !== undefined) {
      try {
        await hook(notice);
      } catch (error) {
        this.logger.error(`onDeadLetter threw: ${(error as Error).message}`);
      }
    }
    const patterns = this.host.handledStreams().filter((handled) => handled.stream === notice.stream && handled.pattern !== undefined).map((handled) => handled.pattern as string);
    for (const listener of listenersFor(notice.stream, patterns)) {
      try {
        await listener.call(notice);
      } catch (error) {
        this.logger.error(`@OnDeadLetter() ${listener.name} threw: ${(error as Error).message}`);
      }
    }
  }

  private reportLost(notice: EntriesLostNotice): void {
    if (notice.reason === 'trimmed_pending') {
      this.logger.warn(
        `${notice.count} pending entries of "${notice.stream}" (group "${notice.group}") were trimmed or deleted before they were handled; acked them away: ${preview(notice.ids)}`,
      );
    } else {
      const howMany = notice.count > 0 ? `${notice.count} entries` : 'entries';
      this.logger.warn(
        `${howMany} of "${notice.stream}" were trimmed before group "${notice.group}" read them (last delivered ${notice.lastDeliveredId}, first entry ${notice.firstEntryId}): MAXLEN is smaller than the backlog`,
      );
    }
    this.emit('entriesLost', notice);
  }

  private reportError(error: Error): void {
    this.counters.lastError = error.message;
    this.logger.error(error.message);
    this.emit('error', error);
  }
}

function preview(ids: readonly string[]): string {
  return ids.length <= 10 ? ids.join(', ') : `${ids.slice(0, 10).join(', ')}, … (${ids.length})`;
}
