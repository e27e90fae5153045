import { Injectable, Logger } from '@nestjs/common';
import { RedisStreamsOptionError } from '../errors.js';
import { reapConsumers, type ReapResult } from '../recovery/consumer-reaper.js';
import type { PurgeResult, RedriveResult } from '../recovery/dead-letter-results.js';
import { handOffEntries, type HandOffResult } from '../recovery/leases.js';
import { streamIdListOption } from '../recovery/recovery-validation.js';
import { describe } from '../validation.js';
import { DashboardContext } from './dashboard-context.js';
import { nameParameter } from './dashboard-reads.js';

/** Most ids one action takes (the page selects at most a page of rows). */
export const MAX_ACTION_IDS = 1000;

/**
 * The dashboard's mutating actions, each logged (action, stream, group, ids and outcome; never a
 * payload) through Nest's Logger. Only reached through the mutation guard (read-only, CSRF).
 */
@Injectable()
export class DashboardActions {
  private readonly logger = new Logger('RedisStreamsDashboard');

  constructor(private readonly context: DashboardContext) {}

  /** Dead letters back to their stream as new entries (`ids` or `'all'`). */
  async redrive(body: unknown): Promise<RedriveResult> {
    const { stream, selection } = this.deadLetterRequest(body);
    const result = await this.context.deadLetters.redrive(stream, selection, this.context.deadLetterKeyOption(stream));
    this.log('redrive dead letters', { stream, ids: selection }, `${result.redriven.length} redriven, ${result.skipped.length} skipped`);
    return result;
  }

  /** Dead letters deleted (`ids` or `'all'`). */
  async purge(body: unknown): Promise<PurgeResult> {
    const { stream, selection } = this.deadLetterRequest(body);
    const result = await this.context.deadLetters.purge(stream, selection, this.context.deadLetterKeyOption(stream));
    this.log('purge dead letters', { stream, ids: selection }, `${result.purged} purged, ${result.notFound.length} not found, ${result.skipped.length} skipped`);
    return result;
  }

  /** XACK of pending entries: they count as handled (the work is not done again). */
  async ack(body: unknown): Promise<{ acked: number }> {
    const request = objectBody(body);
    const stream = nameParameter('stream', request.stream);
    const group = nameParameter('group', request.group);
    const ids = idsParameter(request.ids);
    const acked = await this.context.claimer.ack(stream, group, ids);
    this.log('ack pending entries', { stream, group, ids }, `${acked} acked`);
    return { acked };
  }

  /**
   * Moves pending entries to `consumer`, each only while `owner` (the owner the page showed)
   * still holds it: an entry another consumer took meanwhile is left alone. Their idle time
   * starts again at 0 and their delivery count stays.
   */
  async claim(body: unknown): Promise<HandOffResult> {
    const request = objectBody(body);
    const stream = nameParameter('stream', request.stream);
    const group = nameParameter('group', request.group);
    const owner = nameParameter('owner', request.owner);
    const consumer = nameParameter('consumer', request.consumer);
    const ids = idsParameter(request.ids);
    const result = await handOffEntries(this.context.redis, { stream, group, consumer: owner, handoffConsumer: consumer, idleMs: 0, ids });
    this.log('claim pending entries', { stream, group, owner, consumer, ids }, `${result.handedOff.length} claimed, ${result.lost.length} not held by the owner any more`);
    return result;
  }

  /** XGROUP DELCONSUMER of a consumer that holds no pending entries (checked in the same script). */
  async deleteConsumer(body: unknown): Promise<ReapResult> {
    const request = objectBody(body);
    const stream = nameParameter('stream', request.stream);
    const group = nameParameter('group', request.group);
    const consumer = nameParameter('consumer', request.consumer);
    const result = await reapConsumers(this.context.redis, { stream, group, consumers: [consumer] });
    this.log('delete consumer', { stream, group, consumer }, result.outcomes[0]?.status ?? 'no outcome');
    return result;
  }

  private deadLetterRequest(body: unknown): { stream: string; selection: readonly string[] | 'all' } {
    const request = objectBody(body);
    const stream = nameParameter('stream', request.stream);
    if (request.ids === 'all') return { stream, selection: 'all' };
    return { stream, selection: idsParameter(request.ids) };
  }

  /** Names are JSON-quoted: a hostile name cannot forge a log line. */
  private log(action: string, subject: Record<string, string | readonly string[]>, outcome: string): void {
    const parts = Object.entries(subject).map(([name, value]) => `${name} ${JSON.stringify(value)}`);
    this.logger.log(`${action}: ${parts.join(', ')}: ${outcome}`);
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
