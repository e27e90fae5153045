import type { Logger } from '@nestjs/common';
import { delayedWakeChannel, wakeDelayMs } from '../delayed/wake-channel.js';
import { errorMessage } from '../error-message.js';
import { isNoPermission } from '../redis/acl-refusal.js';
import { isClusterClient } from '../redis/cluster-client.js';
import type { RedisClient } from '../redis/connection.js';

/**
 * Listens on the wake-up channels of the streams a worker promotes (docs/scheduling.md, "Wake-up"):
 * a hold that becomes its stream's earliest is announced there (hold.lua) with the time until it
 * is due, and `wake` re-arms the promoter's next round for it. Subscribed again on every
 * (re)connect, and after each subscription one round at once (`wake(0)`): a hold announced while
 * the connection was down is not left to the interval (at start this is the first round: the
 * promoter waits for it). A Cluster client's subscriber connection
 * follows the topology and subscribes again by itself (ioredis). Refused by the ACL, it warns
 * once, runs that round and ends its connection: the worker promotes by its interval rounds only.
 */
export class DelayedWakeListener {
  private readonly channels: Set<string>;
  private stopped = false;

  constructor(
    private readonly subscriber: RedisClient,
    streams: readonly string[],
    private readonly wake: (inMs: number) => void,
    private readonly logger: Logger,
    /** Ends the subscriber connection (the worker's connections close it otherwise). */
    private readonly end: () => void,
  ) {
    this.channels = new Set(streams.map(delayedWakeChannel));
  }

  start(): void {
    this.subscriber.on('message', this.onMessage);
    if (isClusterClient(this.subscriber)) {
      this.subscribe();
      return;
    }
    // autoResubscribe is off on this connection: each `ready` subscribes, then runs a round.
    this.subscriber.on('ready', this.subscribe);
    if (this.subscriber.status === 'ready') this.subscribe();
  }

  stop(): void {
    this.stopped = true;
    this.subscriber.off('message', this.onMessage);
    this.subscriber.off('ready', this.subscribe);
  }

  private readonly subscribe = (): void => {
    this.subscriber.subscribe(...this.channels).then(
      () => {
        if (!this.stopped) this.wake(0);
      },
      (error: unknown) => this.refused(error),
    );
  };

  private readonly onMessage = (channel: string, message: string): void => {
    if (this.stopped || !this.channels.has(channel)) return;
    const inMs = wakeDelayMs(message);
    if (inMs !== undefined) this.wake(inMs);
  };

  private refused(error: unknown): void {
    if (this.stopped) return;
    if (!isNoPermission(error)) {
      // The connection dropped before the reply: its next `ready` subscribes again.
      this.logger.debug?.(`delayed wake-up subscription failed: ${errorMessage(error)}`);
      return;
    }
    this.stop();
    this.end();
    // The round a subscription would have run (the first one, when refused at start).
    this.wake(0);
    this.logger.warn(
      `cannot subscribe to the delayed wake-up channels (${errorMessage(error)}): held entries are promoted by the interval rounds only, ` +
        `up to delayed.interval late; grant +subscribe ${[...this.channels].map((channel) => `&${channel}`).join(' ')} (docs/security.md)`,
    );
  }
}
