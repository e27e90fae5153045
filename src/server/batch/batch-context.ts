import { BaseRpcContext } from '@nestjs/microservices';
import type { Headers, StreamFields } from '../../codec/wire-format.js';
import { timerDurationOption } from '../../duration.js';
import type { ContextEntry, NackOptions } from '../context.js';
import { RECORD_HANDLER_ERROR } from '../handler-error-capture.js';
import type { DeliveryAbort, DeliveryAborts } from '../../lifecycle/delivery-abort.js';

/** One entry of a batch, as `ctx.entries[i]` describes it (index i of the payload array). */
export interface RedisStreamsBatchEntry {
  /** Its index in the handler's payload array (and in `ctx.entries`). */
  readonly index: number;
  readonly id: string;
  /** 1 on first delivery; Redis' delivery counter for re-reads and claims. */
  readonly deliveryCount: number;
  readonly headers: Headers;
  /** The entry's fields exactly as stored. */
  readonly fields: StreamFields;
}

/** What a batch context does for `extendLease()`. */
export interface BatchLeases {
  extendLease(entry: ContextEntry): Promise<void>;
  /** Where the batch's abort state is registered (shutdown, lost leases and cancels find it). */
  readonly aborts: DeliveryAborts;
}

const NO_HEADERS: Headers = Object.freeze(Object.create(null) as Headers);
const NO_ARGS = [] as unknown as [readonly RedisStreamsBatchEntry[]];

class BatchEntryView implements RedisStreamsBatchEntry {
  constructor(
    readonly index: number,
    private readonly entry: ContextEntry,
    private readonly entryHeaders: Headers | undefined,
  ) {}

  get id(): string {
    return this.entry.id;
  }

  get deliveryCount(): number {
    return this.entry.deliveryCount;
  }

  get headers(): Headers {
    return this.entryHeaders ?? NO_HEADERS;
  }

  /** Built on first use: most batch handlers never look at the raw fields. */
  get fields(): StreamFields {
    return this.entry.fields;
  }
}

/**
 * `@Ctx()` of a batch handler (`@EventPattern('x', { batch: { size, waitMs } })`): the entries
 * behind the payload array, in the same order, and `fail()` to leave some of them pending while the
 * others are acknowledged (docs/batch.md).
 */
export class RedisStreamsBatchContext extends BaseRpcContext<[readonly RedisStreamsBatchEntry[]]> {
  private views: readonly RedisStreamsBatchEntry[] | undefined;
  /** Index → the error `fail()` marked it with. */
  private readonly failures = new Map<number, unknown>();
  /** Index → the wait `fail(…, { delay })` asked for, in ms. */
  private readonly delays = new Map<number, number>();
  private readonly byId = new Map<string, number>();
  private settled = false;
  /** What the handler threw, as it left the handler (before Nest's exception filter replaced it). */
  private thrown: unknown = undefined;
  /** @internal The batch's `signal` and time limit, once read or set. */
  abort: DeliveryAbort | undefined = undefined;

  constructor(
    private readonly batch: readonly ContextEntry[],
    /** Per entry (same order): its decoded headers. */
    private readonly decoded: readonly { readonly headers?: Headers }[],
    private readonly consumer: string,
    private readonly leases: BatchLeases,
  ) {
    // The entry views are built only when asked for (ctx.entries / getArgs): many handlers never do.
    super(NO_ARGS);
  }

  /** The entries behind the payloads, in the same order. */
  get entries(): readonly RedisStreamsBatchEntry[] {
    this.views ??= this.batch.map((entry, index) => new BatchEntryView(index, entry, this.decoded[index]?.headers));
    return this.views;
  }

  override getArgs(): [readonly RedisStreamsBatchEntry[]] {
    return [this.entries];
  }

  override getArgByIndex(index: number): readonly RedisStreamsBatchEntry[] {
    return this.getArgs()[index] as readonly RedisStreamsBatchEntry[];
  }

  /** How many entries (and payloads) the batch has. */
  get size(): number {
    return this.batch.length;
  }

  getEntries(): readonly RedisStreamsBatchEntry[] {
    return this.entries;
  }

  getStream(): string {
    return (this.batch[0] as ContextEntry).binding.stream;
  }

  getGroup(): string {
    return (this.batch[0] as ContextEntry).binding.group;
  }

  getConsumer(): string {
    return this.consumer;
  }

  /** The ids, in the order of the payloads. */
  getIds(): string[] {
    return this.batch.map((entry) => entry.id);
  }

  /**
   * Marks one entry failed: when the handler returns, it stays pending (redelivered later, counted
   * against maxDeliveries, dead-lettered with `error`) while the others are acknowledged. By index
   * in the payload array or by entry id. `{ delay }` (ms or ISO-8601): it comes back after that
   * wait, as with a single entry's `ctx.nack({ delay })`. If the handler throws, every entry stays
   * pending anyway, and the delays asked for still apply to their entries.
   */
  fail(indexOrId: number | string, error: unknown = new Error('marked failed by the batch handler'), options?: NackOptions): void {
    if (this.settled) throw new Error('ctx.fail() after the batch was settled: call it before the handler returns');
    const index = typeof indexOrId === 'number' ? indexOrId : this.indexOf(indexOrId);
    if (!Number.isInteger(index) || index < 0 || index >= this.batch.length) {
      throw new RangeError(`ctx.fail(${JSON.stringify(indexOrId)}): no such entry in this batch of ${this.batch.length}`);
    }
    // Validated before anything is marked: a bad delay leaves the entry unmarked.
    const delayMs = options?.delay === undefined ? undefined : timerDurationOption('delay', options.delay);
    this.failures.set(index, error);
    if (delayMs === undefined) this.delays.delete(index);
    else this.delays.set(index, delayMs);
  }

  /** The indexes marked by `fail()`, in order. */
  getFailed(): number[] {
    return [...this.failures.keys()].sort((a, b) => a - b);
  }

  /**
   * One signal for the whole batch: aborts when its time limit passed (`extras.timeout`), a lease
   * of one of its entries was lost, the shutdown deadline passed, or an operator cancelled one of
   * its entries. `signal.reason` is a `RedisStreamsAbortError` (docs/lifecycle.md).
   */
  get signal(): AbortSignal {
    return this.abortState().signal;
  }

  /** @internal The batch's abort state, made and registered on first use. */
  abortState(): DeliveryAbort {
    this.abort ??= this.leases.aborts.create(this.batch);
    return this.abort;
  }

  /** Tells recovery this consumer still works on every entry of the batch (resets their idle time now). */
  async extendLease(): Promise<void> {
    await Promise.all(this.batch.map((entry) => this.leases.extendLease(entry)));
  }

  /** @internal The outcome, once: the handler's own error (if it threw), the marked failures and their delays (ms). No `fail()` after. */
  settle(): { thrown: unknown; failures: ReadonlyMap<number, unknown>; delays: ReadonlyMap<number, number> } {
    this.settled = true;
    return { thrown: this.thrown, failures: this.failures, delays: this.delays };
  }

  /** @internal Called by Nest's RPC exception filter (see handler-error-capture.ts) with the handler's own error. */
  [RECORD_HANDLER_ERROR](error: unknown): void {
    this.thrown = error;
  }

  private indexOf(id: string): number {
    if (this.byId.size === 0) this.batch.forEach((entry, index) => this.byId.set(entry.id, index));
    return this.byId.get(id) ?? -1;
  }
}
