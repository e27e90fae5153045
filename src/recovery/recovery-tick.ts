import type { StreamInspector } from '../claim/stream-inspector.js';
import { sweepConsumers } from './consumer-sweep.js';
import type { PendingRecoverer } from './pending-recoverer.js';
import type { RecoveryHost } from './recovery-host.js';
import type { ResolvedRecoveryOptions } from './recovery-options.js';
import type { RecoveryReporter } from './recovery-reporter.js';
import { addTick, emptyTickResult, type RecoveryTickResult } from './recovery-stats.js';
import type { TrimWatch } from './trim-watch.js';

/** A stream + group a scheduler recovers: its pending-list walker and its trim check. */
export interface TickTarget {
  readonly recoverer: PendingRecoverer;
  readonly trimWatch: TrimWatch;
  /** A handler nacked an entry of it with a delay: retry ticks cover it, policy or not. */
  nackRetries: boolean;
}

/** What one tick works with. */
export interface TickContext {
  readonly host: RecoveryHost;
  readonly options: ResolvedRecoveryOptions;
  readonly inspector: StreamInspector;
  readonly reporter: RecoveryReporter;
  readonly targets: readonly TickTarget[];
  /** False once the scheduler is stopping: the tick ends after the stream in progress. */
  running(): boolean;
}

/**
 * One tick's work, stream by stream: `full` walks the whole pending list (claims, dead letters),
 * and every `trimCheckEvery` / `reap.every` ticks also checks for trim loss and removes dead
 * consumers; otherwise only the retry consumer's entries are looked at. A failed step is
 * counted and reported, and the tick goes on with the next one. Adds its result to the counters.
 */
export async function runRecoveryTick(context: TickContext, full: boolean): Promise<RecoveryTickResult> {
  const { host, options, inspector, reporter } = context;
  const result = emptyTickResult();
  const number = reporter.counters.ticks + 1;
  const { trimCheckEvery, reap } = options;
  const step = async (what: string, run: () => Promise<void>): Promise<void> => {
    try {
      await run();
    } catch (error) {
      result.errors++;
      reporter.error(new Error(`${what} failed: ${(error as Error).message}`));
    }
  };
  for (const { recoverer, trimWatch, nackRetries } of context.targets) {
    if (!context.running()) break;
    const { stream, group } = recoverer.target;
    if (!full) {
      if (recoverer.target.retry !== undefined || nackRetries) {
        await step(`retries of "${stream}" (group "${group}")`, () => recoverer.tick(result, true));
      }
      continue;
    }
    await step(`recovery of "${stream}" (group "${group}")`, () => recoverer.tick(result));
    if (trimCheckEvery > 0 && number % trimCheckEvery === 0) {
      await step(`trim check of "${stream}" (group "${group}")`, async () => {
        const notice = await trimWatch.check();
        if (notice !== undefined) {
          result.trimmedUndelivered += notice.count;
          reporter.lost(notice);
        }
      });
    }
    if (reap !== undefined && number % reap.every === 0) {
      await step(`consumer clean-up of "${stream}" (group "${group}")`, async () => {
        const removed = await sweepConsumers(host.commandConnection(), inspector, {
          stream,
          group,
          self: host.consumer,
          minIdleTime: reap.minIdleTime,
          handoffConsumer: host.handoffConsumerName?.(),
        });
        if (removed.length > 0) {
          result.consumersReaped += removed.length;
          reporter.logger.log(`removed ${removed.length} idle consumers without pending entries from "${stream}" (group "${group}"): ${removed.join(', ')}`);
        }
      });
    }
  }
  addTick(reporter.counters, result, full);
  return result;
}
