import type { Logger } from '@nestjs/common';
import { StreamInspector } from '../claim/stream-inspector.js';
import type { RedisClient } from '../redis/connection.js';
import type { DeadLetterMoveResult } from './dead-letter-move.js';
import { DeadLetterReporting, type DeadLetterRequest, type MoveTally } from './dead-letter-reporting.js';
import { errorText, HandlerErrorMemory, handlerErrorText } from './handler-error-memory.js';
import { HandlerErrorRecords } from './handler-error-records.js';
import { LeaseKeeper } from './lease-keeper.js';
import type { LeaseThreadSettings } from './lease-thread-handle.js';
import { PendingRecoverer, type RecoveryServices, type RecoveryTarget } from './pending-recoverer.js';
import type { RecoveryEmit } from './recovery-events.js';
import type { RecoveryHost } from './recovery-host.js';
import { derivedTickInterval, type ResolvedRecoveryOptions } from './recovery-options.js';
import { recoveryRegistry } from './recovery-registry.js';
import { RecoveryReporter } from './recovery-reporter.js';
import { emptyTickResult, type RecoveryStats, type RecoveryTickResult } from './recovery-stats.js';
import { runRecoveryTick, type TickTarget } from './recovery-tick.js';
import { TrimWatch } from './trim-watch.js';
import { MIN_RETRY_TICK_MS, retryTickInterval } from './retry-ticks.js';
import { MAX_TIMER_MS } from '../validation.js';
import { withTimeout } from '../timeout.js';

/**
 * Recovery of one running server: a timer of ticks (each: reclaim idle entries, dead-letter
 * poison ones, report trim loss, now and then remove dead consumers), lease renewal of the
 * server's in-flight entries, and dead-lettering of undecodable entries. Built with the server's
 * parts at `listen()`, started once it listens and stopped at `close()`; ticks never overlap.
 */
export class RecoveryScheduler {
  private readonly errors = new HandlerErrorMemory();
  private readonly errorRecords: HandlerErrorRecords;
  /** `minIdleTime` of each handled stream + group (an error record outlives it by an hour). */
  private readonly idleTimes = new Map<string, number>();
  private readonly reporter: RecoveryReporter;
  private readonly deadLetters: DeadLetterReporting;
  private targets: TickTarget[] = [];
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
    emit: RecoveryEmit = () => undefined,
    logger?: Logger,
  ) {
    this.tickInterval = options.interval;
    this.reporter = new RecoveryReporter(emit, logger);
    this.deadLetters = new DeadLetterReporting(host, options, this.reporter, this.errors);
    this.errorRecords = new HandlerErrorRecords((what, error) =>
      this.reporter.error(new Error(`${what} of handler error records failed (dead letters fall back to retry records and this process's memory): ${error.message}`)),
    );
  }

  /** Time between ticks, in ms (known once started: a handler's smaller `extras.minIdleTime` shortens it). */
  get interval(): number {
    return this.tickInterval;
  }

  /** `start()` ran (its stats describe a server that listened). */
  get started(): boolean {
    return this.inspector !== undefined;
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
    for (const stream of handled) this.idleTimes.set(`${stream.stream}\u0000${stream.group}`, stream.minIdleTime ?? this.options.minIdleTime);
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
        return {
          recoverer: new PendingRecoverer(target, services),
          trimWatch: new TrimWatch(target.stream, target.group, this.inspector as StreamInspector),
          nackRetries: false,
        };
      });
    // A handler's smaller extras.minIdleTime must not wait for ticks paced by the server-wide one.
    if (!this.options.intervalGiven && this.targets.length > 0) {
      this.tickInterval = derivedTickInterval(Math.min(...this.targets.map((state) => state.recoverer.target.minIdleTime)));
    }
    const keeper = this.leaseKeeper();
    if (keeper !== undefined) {
      if (this.options.leases) keeper.start();
      this.host.setLeaseExtender(({ stream, group, id }) => keeper.renew(stream, group, [id]));
    }
    recoveryRegistry.add(this);
    this.retryInterval = retryTickInterval(this.targets.map((state) => state.recoverer.target.retry), this.tickInterval);
    if (this.options.enabled && this.targets.length > 0) this.schedule();
  }

  /**
   * Starts the lease thread (unless `leases` or `leases.thread` is off), the watchdog that renews
   * while the event loop is blocked; renewals on the event loop (`start()`) run in every case.
   */
  startLeaseThread(): void {
    const settings = this.leaseThreadSettings();
    if (!this.options.leases || settings === undefined || this.state !== 'idle') return;
    this.leaseKeeper()?.startThread(settings);
  }

  /**
   * The keeper of this server's leases (built once); none without handlers. It also serves
   * `ctx.extendLease()`, which works with `leases: false` (no timer then).
   */
  private leaseKeeper(): LeaseKeeper | undefined {
    if (this.leases !== undefined) return this.leases;
    const handled = this.host.handledStreams();
    if (handled.length === 0) return undefined;
    const smallestIdle = Math.min(...handled.map((stream) => stream.minIdleTime ?? this.options.minIdleTime));
    this.leases = new LeaseKeeper(
      this.host,
      this.options.leaseInterval ?? Math.min(MAX_TIMER_MS, Math.max(1, Math.floor(smallestIdle / 3))),
      this.reporter.logger,
      (count) => (this.reporter.counters.leasesRenewed += count),
      (notice) => {
        this.host.leaseLost?.(notice.stream, notice.group, notice.id, notice.owner);
        this.reporter.counters.leasesLost++;
        this.reporter.emit('leaseLost', notice);
      },
      (error) => this.reporter.error(error),
    );
    return this.leases;
  }

  /** The lease thread's settings, unless `leases.thread: false` or the host cannot say how to connect. */
  private leaseThreadSettings(): Omit<LeaseThreadSettings, 'interval' | 'streams'> | undefined {
    const source = this.host.leaseThreadConnection?.();
    if (!this.options.leaseThread.enabled || source === undefined) return undefined;
    return { ...source, consumer: this.host.consumer, maxBlocked: this.options.leaseThread.maxBlocked };
  }

  /**
   * Stops taking new work (the tick timer, `runOnce()`) and waits for a tick in progress (what it
   * claims is queued, for the server's handoff), up to `waitMs`: a tick Redis does not answer is
   * given up on, it stops at its next step, and what it still claims stays pending for this
   * consumer until claimed again after minIdleTime (a delay, never a loss). Leases keep running so
   * handlers still finishing during shutdown keep their entries; `stop()` ends them.
   */
  async stopTicks(waitMs: number): Promise<void> {
    this.haltTicks();
    await withTimeout(this.tail, waitMs, 'recovery tick').catch(() => undefined);
  }

  /**
   * Stops everything (ticks, leases) and leaves the registry; a tick in progress was waited for by
   * `stopTicks()`, within its bound. A lease renewal round and handler error records in flight are
   * waited for together, up to `waitMs` (what close() has left to wait on Redis); what is given up
   * on ends on the closed connection, unreported, and its entries stay pending (delivered again).
   */
  async stop(waitMs: number): Promise<void> {
    if (this.state === 'stopped') return;
    this.haltTicks();
    this.state = 'stopped';
    recoveryRegistry.delete(this);
    this.host.setLeaseExtender(undefined);
    await Promise.all([this.leases?.stop(waitMs), this.errorRecords.stop(waitMs)]);
  }

  private haltTicks(): void {
    if (this.state === 'running') this.state = 'draining';
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
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
    return this.reporter.stats();
  }

  /**
   * A handler nacked an entry with a delay (it waits with the retry consumer): retry ticks cover
   * this stream + group from now on, at least every quarter of the delay (as a retry policy with
   * that wait would), so it comes back on time without waiting for `minIdleTime`.
   */
  retryAfterNack(stream: string, group: string, delayMs: number): void {
    const target = this.targetOf(stream, group);
    if (target === undefined) return;
    target.nackRetries = true;
    const wanted = Math.min(this.tickInterval, Math.max(MIN_RETRY_TICK_MS, Math.floor(delayMs / 4)));
    if (this.retryInterval !== undefined && this.retryInterval <= wanted) return;
    this.retryInterval = wanted;
    // The timer armed with the longer pace is re-armed with the new one (a tick in progress re-arms it itself).
    if (this.timer !== undefined && this.state === 'running') {
      clearTimeout(this.timer);
      this.schedule();
    }
  }

  private targetOf(stream: string, group: string): TickTarget | undefined {
    return this.targets.find(({ recoverer }) => recoverer.target.stream === stream && recoverer.target.group === group);
  }

  /** The dead-letter stream key of `stream` under these options. */
  deadLetterKeyFor(stream: string): string {
    return this.deadLetters.keyFor(stream);
  }

  /**
   * Remembers a handler failure so a later dead letter can carry it (the server calls this): in
   * memory, and in Redis for a worker that dead-letters it elsewhere or after a restart.
   */
  recordHandlerError(stream: string, group: string, id: string, error: unknown): void {
    const text = handlerErrorText(error);
    this.errors.record(stream, group, id, text);
    if (this.state === 'idle' || this.state === 'stopped') return;
    const minIdleTime = this.idleTimes.get(`${stream}\u0000${group}`) ?? this.options.minIdleTime;
    this.errorRecords.write(this.host.commandConnection(), stream, group, id, text, minIdleTime);
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
    try {
      await this.deadLetterFailed(
        this.host.commandConnection(),
        { stream, group, ids, reason: 'max_deliveries', expectedConsumer: this.host.consumer, minIdleTime },
        this.reporter.counters,
      );
    } catch (error) {
      this.reporter.counters.errors++;
      this.reporter.error(new Error(`dead-lettering ${ids.length} exhausted entries of "${stream}" failed; they stay pending: ${(error as Error).message}`));
    }
  }

  /**
   * Pending entries of this group whose body is gone (trimmed, XDEL'ed): acks them away, counts
   * and reports them, once per process (the restart re-read and a tick's claim can both find one).
   */
  async ackLost(stream: string, group: string, ids: readonly string[], tally: MoveTally = this.reporter.counters): Promise<void> {
    // Marked before the XACK's round trip, so a second finder meanwhile skips them.
    const fresh = this.reporter.reportedLost.addNew(stream, group, ids);
    if (fresh.length === 0) return;
    try {
      await this.host.commandConnection().xack(stream, group, ...fresh);
    } catch (error) {
      this.reporter.reportedLost.forget(stream, group, fresh);
      throw error;
    }
    tally.deletedPending += fresh.length;
    this.reporter.lost({ stream, group, reason: 'trimmed_pending', count: fresh.length, ids: fresh.slice(0, 1000) });
  }

  /**
   * Dead-letters an undecodable entry this consumer holds (reason `decode_error`) on its first
   * delivery. Resolves true when it was moved; on failure it stays pending (logged).
   */
  async deadLetterUndecodable(stream: string, group: string, id: string, error: unknown): Promise<boolean> {
    try {
      const result = await this.deadLetters.moveAndReport(
        this.host.commandConnection(),
        { stream, group, ids: [id], reason: 'decode_error', error: errorText(error), expectedConsumer: this.host.consumer },
        { deadLettered: 0, deletedPending: 0 }, // counted as decodeErrors
      );
      const moved = result.moved.length > 0;
      if (moved) this.reporter.counters.decodeErrors++;
      return moved;
    } catch (error) {
      this.reporter.error(new Error(`dead-lettering undecodable entry ${id} of "${stream}" failed; it stays pending: ${(error as Error).message}`));
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

  private tick(full: boolean): Promise<RecoveryTickResult> {
    return runRecoveryTick(
      { host: this.host, options: this.options, inspector: this.inspector as StreamInspector, reporter: this.reporter, targets: this.targets, running: () => this.state === 'running' },
      full,
    );
  }

  // ---- what the recoverers use ----

  private services(redis: RedisClient, inspector: StreamInspector): RecoveryServices {
    return {
      host: this.host,
      redis,
      inspector,
      logger: this.reporter.logger,
      pageSize: this.options.pageSize,
      maxPages: this.options.maxPages,
      retryConsumer: this.options.retryConsumer,
      deadLetter: (request, tally) => this.deadLetterFailed(redis, request, tally),
      ackLost: (stream, group, ids, tally) => this.ackLost(stream, group, ids, tally),
      reportRecovered: (stream, group, ids) => this.reporter.recovered(stream, group, ids),
      reportError: (error) => this.reporter.error(error),
    };
  }

  /**
   * Dead-letters entries whose handler failed, each with its last handler error: the error
   * record (written wherever it failed), else the retry record's (`request.errors`), else this
   * process's memory. The error records used are deleted once their entries are moved.
   */
  private async deadLetterFailed(redis: RedisClient, request: DeadLetterRequest, tally: MoveTally): Promise<DeadLetterMoveResult> {
    const { stream, group, ids } = request;
    const recorded = await this.errorRecords.read(redis, stream, group, ids);
    const errors = { ...this.deadLetters.rememberedErrors(stream, group, ids), ...request.errors, ...recorded };
    const result = await this.deadLetters.moveAndReport(redis, { ...request, errors }, tally);
    await this.errorRecords.delete(redis, stream, group, result.moved.filter((id) => recorded[id] !== undefined));
    return result;
  }
}
