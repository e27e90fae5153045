import { Injectable, Logger } from '@nestjs/common';
import { promoteDelayedNow, removeDelayed } from '../delayed/delayed-inspection.js';
import { RedisStreamsOptionError } from '../errors.js';
import { pauseGroup, resumeGroup } from '../flow/pause-state.js';
import { partitionedStreamOf } from '../partitions/partition-of-key.js';
import { Redactor } from '../redaction.js';
import { reapConsumers, type ReapResult } from '../recovery/consumer-reaper.js';
import type { PurgeResult, RedriveResult } from '../recovery/dead-letter-results.js';
import { handOffEntries, type HandOffResult } from '../recovery/leases.js';
import { streamIdListOption } from '../recovery/recovery-validation.js';
import { describe } from '../validation.js';
import { DashboardContext } from './dashboard-context.js';
import { MAX_NAME_LENGTH, nameParameter } from './dashboard-reads.js';
import { errorMessage } from '../error-message.js';
import { cancelEntry, type CancelOutcome } from '../lifecycle/cancel.js';
import { entryStreamsOf } from '../lifecycle/entry-streams.js';
import { entryIdParameter } from './entry-range.js';

/** Most ids one action takes (the page selects at most a page of rows). */
export const MAX_ACTION_IDS = 1000;

/**
 * The dashboard's mutating actions, each logged (action, stream, group, ids and outcome; never a
 * payload) through Nest's Logger. Only reached through the mutation guard (read-only, CSRF).
 */
@Injectable()
export class DashboardActions {
  private readonly logger = new Logger('RedisStreamsDashboard');
  private readonly redactor: Redactor;

  constructor(private readonly context: DashboardContext) {
    this.redactor = Redactor.for(context.redis);
  }

  /** Dead letters back to their stream as new entries (`ids` or `'all'`). */
  redrive(body: unknown): Promise<RedriveResult> {
    const { stream, selection } = this.deadLetterRequest(body);
    return this.logged('redrive dead letters', { stream, ids: selection }, () => this.context.deadLetters.redrive(stream, selection, this.context.deadLetterKeyOption(stream)), (result) => `${result.redriven.length} redriven, ${result.skipped.length} skipped`);
  }

  /** Dead letters deleted (`ids` or `'all'`). */
  purge(body: unknown): Promise<PurgeResult> {
    const { stream, selection } = this.deadLetterRequest(body);
    return this.logged('purge dead letters', { stream, ids: selection }, () => this.context.deadLetters.purge(stream, selection, this.context.deadLetterKeyOption(stream)), (result) => `${result.purged} purged, ${result.notFound.length} not found, ${result.skipped.length} skipped`);
  }

  /** XACK of pending entries: they count as handled (the work is not done again). */
  ack(body: unknown): Promise<{ acked: number }> {
    const request = objectBody(body);
    const stream = nameParameter('stream', request.stream);
    const group = nameParameter('group', request.group);
    const ids = idsParameter(request.ids);
    return this.logged('ack pending entries', { stream, group, ids }, async () => ({ acked: await this.context.claimer.ack(stream, group, ids) }), ({ acked }) => `${acked} acked`);
  }

  /**
   * Moves pending entries to `consumer`, each only while `owner` (the owner the page showed)
   * still holds it: an entry another consumer took meanwhile is left alone. Their idle time
   * starts again at 0 and their delivery count stays.
   */
  claim(body: unknown): Promise<HandOffResult> {
    const request = objectBody(body);
    const stream = nameParameter('stream', request.stream);
    const group = nameParameter('group', request.group);
    const owner = nameParameter('owner', request.owner);
    const consumer = nameParameter('consumer', request.consumer);
    const ids = idsParameter(request.ids);
    return this.logged(
      'claim pending entries',
      { stream, group, owner, consumer, ids },
      () => handOffEntries(this.context.redis, { stream, group, consumer: owner, handoffConsumer: consumer, idleMs: 0, ids }),
      (result) => `${result.handedOff.length} claimed, ${result.lost.length} not held by the owner any more`,
    );
  }

  /**
   * Makes one held delayed entry due now and promotes (as the CLI's `delayed promote`): added to
   * the stream once however many workers promote at the same time; entries already due go along.
   * A hold promoted or removed meanwhile is not scheduled again.
   */
  async promoteDelayed(body: unknown): Promise<{ stream: string; hold: string; promoted: { hold: string; id: string }[]; skipped: { hold: string; status: string }[] }> {
    const request = objectBody(body);
    const stream = nameParameter('stream', request.stream);
    const hold = holdParameter('hold', request.hold);
    return this.logged(
      'promote delayed entry',
      { stream, hold },
      async () => ({ hold, ...(await promoteDelayedNow(this.context.redis, stream, [hold])) }),
      (result) => {
        if (result.promoted.some((one) => one.hold === hold)) return `promoted, ${result.promoted.length} in all`;
        // dropped (NOMKSTREAM and no stream), missing or invalid body: removed without an entry.
        const skipped = result.skipped.find((one) => one.hold === hold);
        return `${skipped === undefined ? 'not held any more' : `not promoted: ${skipped.status}`}, ${result.promoted.length} other due promoted`;
      },
    );
  }

  /** Removes held delayed entries or recurring schedules for good (their schedule, body and recurring-set member). */
  removeDelayed(body: unknown): Promise<{ stream: string; requested: number; removed: number }> {
    const request = objectBody(body);
    const stream = nameParameter('stream', request.stream);
    const holds = holdsParameter(request.holds);
    return this.logged('remove delayed entries', { stream, holds }, () => removeDelayed(this.context.redis, stream, holds), (result) => `${result.removed} removed of ${result.requested}`);
  }

  /** XGROUP DELCONSUMER of a consumer that holds no pending entries (checked in the same script). */
  deleteConsumer(body: unknown): Promise<ReapResult> {
    const request = objectBody(body);
    const stream = nameParameter('stream', request.stream);
    const group = nameParameter('group', request.group);
    const consumer = nameParameter('consumer', request.consumer);
    return this.logged('delete consumer', { stream, group, consumer }, () => reapConsumers(this.context.redis, { stream, group, consumers: [consumer] }), (result) => result.outcomes[0]?.status ?? 'no outcome');
  }

  /**
   * The lifecycle's cancel of one entry (as `client.cancel` and the CLI's `cancel`): dead-lettered
   * with reason `cancelled` and the operator's `reason` as its error, taken out of its hold, the
   * stream and every pending list; a worker running it is told at its next lease renewal. A
   * partitioned stream's partitions are searched.
   */
  cancel(body: unknown): Promise<CancelOutcome> {
    const request = objectBody(body);
    const stream = nameParameter('stream', request.stream);
    const id = entryIdParameter(request.id);
    const reason = request.reason;
    const deadLetterKey = this.context.deadLetterKeyOf(this.context.targets());
    return this.logged(
      'cancel entry',
      { stream, id },
      async () => cancelEntry(this.context.redis, await entryStreamsOf(this.context.redis, stream, undefined), id, reason, { deadLetterKey }),
      (outcome) => (outcome.cancelled ? `cancelled (was ${outcome.previous}), dead letter ${outcome.deadLetter?.id ?? ''}` : `not cancelled: ${outcome.previous}`),
    );
  }

  /**
   * Pauses (`pause` true) or resumes a group for every worker: they stop, or start again, reading
   * within one pause poll. Kept on the stream's own name (a partitioned stream's, for all its
   * partitions); a partition's key is refused, as a pause written there would stop nothing.
   */
  setPaused(body: unknown, pause: boolean): Promise<{ stream: string; group: string; paused: boolean; changed: boolean }> {
    const request = objectBody(body);
    const stream = nameParameter('stream', request.stream);
    const group = nameParameter('group', request.group);
    return this.logged(
      pause ? 'pause group' : 'resume group',
      { stream, group },
      async () => {
        const partition = await partitionedStreamOf(this.context.redis, stream);
        if (partition !== undefined) {
          throw new RedisStreamsOptionError('stream', `${stream} is partition ${partition.index} of ${partition.stream}: pause or resume ${partition.stream}, for every partition`);
        }
        const changed = pause ? await pauseGroup(this.context.redis, stream, group) : await resumeGroup(this.context.redis, stream, group);
        return { stream, group, paused: pause, changed };
      },
      ({ changed }) => (changed ? (pause ? 'paused' : 'resumed') : pause ? 'already paused' : 'was not paused'),
    );
  }

  private deadLetterRequest(body: unknown): { stream: string; selection: readonly string[] | 'all' } {
    const request = objectBody(body);
    const stream = nameParameter('stream', request.stream);
    if (request.ids === 'all') return { stream, selection: 'all' };
    return { stream, selection: idsParameter(request.ids) };
  }

  /**
   * Runs an action (a bulk step too) and logs it with its outcome, or its failure as a warning. Names are
   * JSON-quoted, so a hostile name cannot forge a log line; payloads are never logged.
   */
  async logged<T>(action: string, subject: Record<string, string | readonly string[]>, run: () => Promise<T>, outcome: (result: T) => string): Promise<T> {
    const what = `${action}: ${Object.entries(subject).map(([name, value]) => `${name} ${JSON.stringify(value)}`).join(', ')}`;
    try {
      const result = await run();
      this.logger.log(`${what}: ${outcome(result)}`);
      return result;
    } catch (error) {
      this.logger.warn(`${what}: failed: ${this.redactor.text(errorMessage(error))}`);
      throw error;
    }
  }
}

function objectBody(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new RedisStreamsOptionError('body', `must be a JSON object, got ${describe(body)}`);
  }
  return body as Record<string, unknown>;
}

function idsParameter(value: unknown): string[] {
  const ids = streamIdListOption('ids', value);
  if (ids.length === 0) throw new RedisStreamsOptionError('ids', 'must name at least one id');
  if (ids.length > MAX_ACTION_IDS) throw new RedisStreamsOptionError('ids', `at most ${MAX_ACTION_IDS} ids at once, got ${ids.length}`);
  return ids;
}

function holdParameter(option: string, value: unknown): string {
  if (typeof value !== 'string' || value === '' || value.length > MAX_NAME_LENGTH) {
    throw new RedisStreamsOptionError(option, `must be a hold id (1 to ${MAX_NAME_LENGTH} characters), got ${describe(value)}`);
  }
  return value;
}

function holdsParameter(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0) throw new RedisStreamsOptionError('holds', `must name at least one hold id, got ${describe(value)}`);
  if (value.length > MAX_ACTION_IDS) throw new RedisStreamsOptionError('holds', `at most ${MAX_ACTION_IDS} hold ids at once, got ${value.length}`);
  return value.map((hold, index) => holdParameter(`holds[${index}]`, hold));
}
