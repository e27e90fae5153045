import type { Logger } from '@nestjs/common';
import { errorMessage } from '../error-message.js';
import type { RedisClient } from '../redis/connection.js';
import { encodeRecord, progressRecordText } from './lifecycle-records.js';
import { lifecycleNoticesKey, NOTICES_MAX_LEN, progressKey, resultKey } from './lifecycle-keys.js';
import { lifecycleScripts } from './scripts/loader.js';

/** How long one entry's progress reports are gathered into one write: the last value within it wins. */
export const PROGRESS_WINDOW_MS = 100;
/** How long progress is kept without `keepResults` (with it, as long as the result). */
export const DEFAULT_PROGRESS_TTL_MS = 24 * 60 * 60 * 1000;

/** What the writer reads of an in-flight entry. */
export interface RecordedEntry {
  readonly binding: { readonly stream: string; readonly group: string; readonly keepResults: number | undefined };
  readonly id: string;
  readonly deliveryCount: number;
}

/**
 * The server's writes of progress and kept results (one script call each: the record with its
 * TTL, and a notice for waiters). A failed write is logged, never the entry's failure: these are
 * notes about the work, not the work.
 */
export class LifecycleWriter {
  constructor(
    private readonly commands: RedisClient,
    private readonly logger: Logger,
  ) {}

  /** The coalescing progress of one delivery. */
  progressOf(entry: RecordedEntry): EntryProgress {
    return new EntryProgress(this, entry);
  }

  /**
   * The delivery settled: its last progress report (not left behind its timer), then its kept
   * result (`extras.keepResults`) with its notice. Without `keepResults` the last report carries
   * the settlement notice for its watchers (one call, not two); with no report left to write, the
   * notice is written alone.
   */
  settled(entry: RecordedEntry, progress: EntryProgress | undefined, outcome: { value: unknown } | { error: unknown }): Promise<void> {
    if (entry.binding.keepResults === undefined) {
      return (progress?.flush('settled') ?? Promise.resolve(false)).then((carried) => (carried ? undefined : this.settledNotice(entry)));
    }
    return (progress?.flush('progress') ?? Promise.resolve(false)).then(() => this.keepResult(entry, entry.binding.keepResults as number, outcome));
  }

  /** Keeps the delivery's outcome: its return value, or its error, for `ttl` ms. */
  private keepResult(entry: RecordedEntry, ttl: number, outcome: { value: unknown } | { error: unknown }): Promise<void> {
    const at = new Date().toISOString();
    let text: string;
    try {
      text =
        'value' in outcome
          ? encodeRecord({ state: 'done', value: outcome.value ?? null, delivery: entry.deliveryCount, at })
          : encodeRecord({ state: 'failed', error: errorRecord(outcome.error), delivery: entry.deliveryCount, at });
    } catch (error) {
      text = encodeRecord({ state: 'failed', error: { name: 'RedisStreamsResultError', message: `the result could not be kept: ${errorMessage(error)}` }, delivery: entry.deliveryCount, at });
    }
    return this.write(entry, resultKey(entry.binding.stream, entry.id), text, ttl, 'result');
  }

  /** Without a kept result, a delivery that reported progress still tells its watchers it settled. */
  private settledNotice(entry: RecordedEntry): Promise<void> {
    const { stream, group } = entry.binding;
    return this.commands.xadd(lifecycleNoticesKey(stream), 'MAXLEN', '~', NOTICES_MAX_LEN, '*', 'id', entry.id, 'kind', 'settled').then(
      () => undefined,
      (error: unknown) => this.logger.warn(`settlement notice of entry ${entry.id} of "${stream}" (group "${group}") could not be written: ${errorMessage(error)}`),
    );
  }

  /** @internal */
  write(entry: RecordedEntry, key: string, text: string, ttlMs: number, kind: 'progress' | 'result' | 'settled'): Promise<void> {
    const { stream, group } = entry.binding;
    return lifecycleScripts(this.commands)
      .nrsWriteRecord(key, lifecycleNoticesKey(stream), text, ttlMs, entry.id, kind, NOTICES_MAX_LEN)
      .then(
        () => undefined,
        (error: unknown) => this.logger.warn(`${kind === 'result' ? 'result' : 'progress'} of entry ${entry.id} of "${stream}" (group "${group}") could not be written: ${errorMessage(error)}`),
      );
  }
}

/** One delivery's progress: reports within PROGRESS_WINDOW_MS are one write, of the last value. */
export class EntryProgress {
  private latest: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private written: Promise<void> | undefined;
  private resolveWritten: (() => void) | undefined;

  constructor(
    private readonly writer: LifecycleWriter,
    private readonly entry: RecordedEntry,
  ) {}

  /** Records `value` (checked now: a bad one throws `RedisStreamsProgressError`); resolves once the write that carries it is done. */
  report(value: unknown): Promise<void> {
    this.latest = progressRecordText(value, this.entry.deliveryCount);
    if (this.timer === undefined) {
      this.written = new Promise((resolve) => (this.resolveWritten = resolve));
      this.timer = setTimeout(() => void this.flush('progress'), PROGRESS_WINDOW_MS);
    }
    return this.written as Promise<void>;
  }

  /**
   * Writes the last value now (the delivery settled: its last report is not left behind a timer),
   * its notice of kind `kind` (`settled`: the settlement notice rides along); `false` when no
   * report was left to write.
   */
  async flush(kind: 'progress' | 'settled' = 'progress'): Promise<boolean> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const text = this.latest;
    const resolve = this.resolveWritten;
    this.latest = undefined;
    this.resolveWritten = undefined;
    if (text === undefined) return false;
    const { entry } = this;
    await this.writer.write(entry, progressKey(entry.binding.stream, entry.id), text, entry.binding.keepResults ?? DEFAULT_PROGRESS_TTL_MS, kind);
    resolve?.();
    return true;
  }
}

function errorRecord(error: unknown): { name: string; message: string } {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: 'Error', message: errorMessage(error) };
}
