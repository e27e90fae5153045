import type { RedisClient } from '../redis/connection.js';

/** Life of a server: `listen()` goes from idle to listening, `close()` to closed. */
export type ServerState = 'idle' | 'starting' | 'listening' | 'closing' | 'closed';

/**
 * What one reader's loop last did, for health checks: when its read in flight started (a blocked
 * XREADGROUP is alive), and when a read last came back with a reply. Per read, never per entry.
 */
export class ReaderPulse {
  /** Epoch ms the pulse was made (the baseline before the first read returns). */
  readonly since = Date.now();
  /** Epoch ms the read now in flight was sent, or null when none is. */
  readStartedAt: number | null = null;
  /** Epoch ms a read last returned a reply, or null before the first one. */
  lastReadAt: number | null = null;
  /** Why the loop waits without reading (its groups are paused, its shared limits granted nothing), or null. */
  held: ReaderHold | null = null;

  /** Wraps a wait in which the loop reads nothing on purpose: not a stuck loop. The quiet time counts from its end. */
  async holding(reason: ReaderHold, wait: Promise<void>): Promise<void> {
    this.held = reason;
    try {
      await wait;
    } finally {
      this.held = null;
      this.lastReadAt = Date.now();
    }
  }

  /** Wraps one read: the pulse notes its start, and its reply (a failure is no sign of life). */
  track<T>(read: Promise<T>): Promise<T> {
    this.readStartedAt = Date.now();
    return read.then(
      (reply) => {
        this.readStartedAt = null;
        this.lastReadAt = Date.now();
        return reply;
      },
      (error: unknown) => {
        this.readStartedAt = null;
        throw error;
      },
    );
  }
}

/** `paused`: every stream of the reader is paused (flow control); `limited`: its shared rate limit or global concurrency granted nothing yet. */
export type ReaderHold = 'paused' | 'limited';

/** One connection of a server and its ioredis status (`ready` when usable). */
export interface ConnectionLiveness {
  readonly name: string;
  readonly status: string;
}

/** One reader (one blocking connection, one consumer group). */
export interface ReaderLiveness {
  readonly group: string;
  readonly streams: readonly string[];
  /** Whether an XREADGROUP is in flight (blocked reads count as alive). */
  readonly reading: boolean;
  /** Epoch ms the read in flight was sent, or null. */
  readonly readStartedAt: number | null;
  /** Epoch ms a read last returned, or null before the first. */
  readonly lastReadAt: number | null;
  /** Epoch ms the reader was created (the baseline before its first read). */
  readonly since: number;
  /** Why it reads nothing on purpose now (paused, or waiting for its shared limits), or null. */
  readonly held: ReaderHold | null;
}

/** One stream + group this server consumes, and the dead-letter stream of its stream. */
export interface StreamLiveness {
  readonly stream: string;
  readonly group: string;
  readonly deadLetterKey: string;
  /** A partition (`orders:p3`): the partitioned stream it belongs to (`orders`); else undefined. */
  readonly partitionOf?: string;
  /** A priority lane (`orders:high`): the pattern's stream (`orders`); else undefined. */
  readonly priorityOf?: string;
  /** The group is paused on this stream, as this worker last read the pause state (within one poll; no Redis command here). */
  readonly paused: boolean;
}

/** Recovery's part: its ticks and how many failed in a row. */
export interface RecoveryLiveness {
  /** Ticks run on a timer (`recovery.enabled`). */
  readonly scheduled: boolean;
  readonly ticks: number;
  /** Ticks in a row, up to the last one, that had a failed step. */
  readonly failedTicksInARow: number;
  readonly lastTickAt: number | null;
  readonly lastError: string | null;
}

/**
 * `server.liveness()`: a read-only snapshot of a server for health checks (the terminus indicator
 * in `nestjs-redis-streams/health` judges it). Costs no Redis command.
 */
export interface RedisStreamsLiveness {
  readonly consumer: string;
  readonly state: ServerState;
  /** Epoch ms the snapshot was taken. */
  readonly at: number;
  /** The server's `blockMs`: how long a blocked read may wait before Redis answers. */
  readonly blockMs: number;
  readonly connections: readonly ConnectionLiveness[];
  readonly readers: readonly ReaderLiveness[];
  readonly streams: readonly StreamLiveness[];
  /** Prefetch slots: free now, and held by fetched entries (queued, running or awaiting their ack). */
  readonly prefetch: { readonly size: number; readonly free: number; readonly inFlight: number };
  readonly recovery: RecoveryLiveness | null;
}

/** What the server hands over to build its snapshot. */
export interface LivenessSources {
  readonly consumer: string;
  readonly state: RedisStreamsLiveness['state'];
  readonly blockMs: number;
  readonly prefetch: number;
  readonly commands: RedisClient | undefined;
  readonly readers: readonly { readonly group: string; readonly client: RedisClient; readonly pulse: ReaderPulse; readonly bindings: readonly { stream: string }[] }[];
  readonly streams: readonly StreamLiveness[];
  readonly freeSlots: number;
  readonly inFlight: number;
  readonly recovery: RecoveryLiveness | null;
}

export function livenessOf(sources: LivenessSources): RedisStreamsLiveness {
  const connections: ConnectionLiveness[] = [];
  if (sources.commands !== undefined) connections.push({ name: 'commands', status: sources.commands.status });
  for (const reader of sources.readers) connections.push({ name: `reader:${reader.group}`, status: reader.client.status });
  return {
    consumer: sources.consumer,
    state: sources.state,
    at: Date.now(),
    blockMs: sources.blockMs,
    connections,
    readers: sources.readers.map(({ group, pulse, bindings }) => ({
      group,
      streams: bindings.map((binding) => binding.stream),
      reading: pulse.readStartedAt !== null,
      readStartedAt: pulse.readStartedAt,
      lastReadAt: pulse.lastReadAt,
      since: pulse.since,
      held: pulse.held,
    })),
    streams: sources.streams,
    prefetch: { size: sources.prefetch, free: sources.freeSlots, inFlight: sources.inFlight },
    recovery: sources.recovery,
  };
}

/** What a health check needs of a server. */
export interface LivenessSource {
  readonly consumer: string;
  liveness(): RedisStreamsLiveness;
  /** The command connection (after `listen()`): PING and the threshold queries. */
  commandConnection(): RedisClient;
}

/**
 * The servers listening in this process: a server joins when it starts listening and leaves at
 * `close()`. Process-wide on purpose, like the recovery registry: a strategy is usually built
 * outside Nest's container, and the health indicator finds it here.
 */
export const listeningServers = new Set<LivenessSource>();
