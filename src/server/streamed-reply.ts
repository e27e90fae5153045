import type { Observable, Observer, Subscription } from 'rxjs';
import type { ReplyPacket } from '../codec/reply.js';
import type { InFlightEntry } from './in-flight.js';
import type { AbandonableStream } from './running-streams.js';
import { requestFailed, settleAnswered, writeReplies, type DecodedRequest, type RequestHost } from './request-replies.js';

/** Largest number of replies one MULTI carries (a long burst of values goes in several, in order). */
const MAX_REPLIES_PER_WRITE = 256;

/**
 * Answers a request whose handler returned an Observable as Nest's `Server.send()` does: every
 * value is a reply `{ response, isDisposed: false }` as it comes, then the end is one with
 * `isDisposed: true` (an error: `{ err, isDisposed: true }`, after the values sent before it). The
 * request is settled (acked) only once that final reply is written.
 */
export function streamReplies(host: RequestHost, entry: InFlightEntry, decoded: DecodedRequest, source: Observable<unknown>): void {
  new StreamedReply(host, entry, decoded).subscribeTo(source);
}

/**
 * The replies of one request, written in order by one writer at a time. Values that come while a
 * write is in flight wait and go together in the next (one MULTI). An end that finds its last
 * value still waiting marks that value final, as Nest does: a value and its completion in one
 * tick (an interceptor's `of(x)`, a filter that recovers) are one reply entry.
 */
class StreamedReply implements Observer<unknown>, AbandonableStream {
  private queue: ReplyPacket[] = [];
  private writing = false;
  /** The final packet is queued: later notifications are Observable contract breaches, ignored. */
  private ended = false;
  /** A reply could not be written: the entry is finished as failed, the handler unsubscribed. */
  private abandoned = false;
  private failed = false;
  private ownError: unknown;
  private subscription: Subscription | undefined;
  /** Set when close() abandons this stream during a write: resolved once that write ended. */
  private stopped: (() => void) | undefined;

  constructor(
    private readonly host: RequestHost,
    private readonly entry: InFlightEntry,
    private readonly decoded: DecodedRequest,
  ) {}

  subscribeTo(source: Observable<unknown>): void {
    this.host.streams.add(this);
    const subscription = source.subscribe(this);
    if (this.abandoned) subscription.unsubscribe();
    else this.subscription = subscription;
  }

  /**
   * close() gives up on this stream: unsubscribed, nothing more is written, the entry is finished
   * as failed (it stays pending). A write in flight ends first: the promise says when.
   */
  abandon(): Promise<void> | undefined {
    if (this.abandoned) return undefined;
    this.abandoned = true;
    this.queue = [];
    this.subscription?.unsubscribe();
    if (this.writing) return new Promise((resolve) => (this.stopped = resolve));
    this.host.finish(this.entry, false);
    return undefined;
  }

  next(value: unknown): void {
    if (!this.ended) this.push({ response: value, isDisposed: false });
  }

  error(error: unknown): void {
    if (this.ended) return;
    this.failed = true;
    this.ownError = requestFailed(this.host, this.entry, error);
    this.ended = true;
    this.push({ err: error, isDisposed: true });
  }

  complete(): void {
    if (this.ended) return;
    this.ended = true;
    const last = this.queue[this.queue.length - 1];
    if (last !== undefined) last.isDisposed = true;
    else this.push({ isDisposed: true });
  }

  private push(packet: ReplyPacket): void {
    if (this.abandoned) return;
    this.queue.push(packet);
    if (this.writing) return;
    this.writing = true;
    // On the next tick, as Nest does: whatever the Observable emits (and its end) until then goes together.
    process.nextTick(writeQueued, this);
  }

  async writeQueued(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.length <= MAX_REPLIES_PER_WRITE ? this.queue : this.queue.slice(0, MAX_REPLIES_PER_WRITE);
      this.queue = this.queue.length <= MAX_REPLIES_PER_WRITE ? [] : this.queue.slice(MAX_REPLIES_PER_WRITE);
      const written = await writeReplies(this.host, this.entry, this.decoded, batch, this.failed, this.ownError);
      if (!written) {
        // The entry stays pending (redelivered later); the handler has nobody to answer any more.
        const closing = this.abandoned;
        this.abandoned = true;
        this.queue = [];
        this.subscription?.unsubscribe();
        this.host.streams.delete(this);
        if (closing) this.stopped?.();
        return;
      }
      if (batch[batch.length - 1]?.isDisposed === true) {
        this.host.streams.delete(this);
        settleAnswered(this.host, this.entry, this.failed);
        this.stopped?.();
        return;
      }
    }
    this.writing = false;
    if (this.abandoned) this.giveUp();
  }

  /** Abandoned by close() while it wrote (or was about to): the write is done, the entry stays pending. */
  private giveUp(): void {
    this.host.finish(this.entry, false);
    this.stopped?.();
  }
}

function writeQueued(reply: StreamedReply): void {
  void reply.writeQueued();
}
