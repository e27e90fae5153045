import type { RedisClient } from '../redis/connection.js';
import { deadLetterKey } from '../redis/keys.js';
import type { DeadLetterNotice, EntriesLostNotice, RecoveredNotice } from '../recovery/recovery-events.js';
import type { Headers } from '../codec/wire-format.js';
import { parseDeadLetter } from '../recovery/dead-letter-format.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { GroupGauges } from './group-gauges.js';
import { livenessOf, type RedisStreamsLiveness, type ServerState } from './liveness.js';
import type { ResolvedServerOptions } from './options.js';
import type { ServerEventEmitter } from './server-events.js';
import type { ServerParts } from './server-parts.js';

/** What observation reads of a server (live values, read when asked). */
export interface ObservedServer {
  readonly options: ResolvedServerOptions;
  readonly events: ServerEventEmitter;
  state(): ServerState;
  /** The command connection, once opened. */
  commands(): RedisClient | undefined;
  /** Built at `listen()`. */
  parts(): ServerParts | undefined;
}

/**
 * How a server is watched from outside: the liveness snapshot of health checks, recovery's events
 * counted and drawn on traces, the per-group gauges. No Redis command of its own but the gauges'.
 */
export class ServerObservation {
  private gauges: GroupGauges | undefined;

  constructor(private readonly server: ObservedServer) {}

  /** A snapshot for health checks: connections, read loops, prefetch, recovery ticks (see docs/observability.md). No Redis command. */
  liveness(): RedisStreamsLiveness {
    const { options } = this.server;
    const parts = this.server.parts();
    const recovery = parts?.recovery.started === true ? parts.recovery : undefined;
    const stats = recovery?.stats();
    const slots = parts?.slots;
    return livenessOf({
      consumer: options.consumer,
      state: this.server.state(),
      blockMs: options.blockMs,
      prefetch: slots?.prefetchSize ?? options.prefetch,
      commands: this.server.commands(),
      readers: parts?.readers ?? [],
      streams: (parts?.bindings ?? []).map((binding) => ({
        stream: binding.stream,
        group: binding.group,
        ...(binding.partitionOf === undefined ? {} : { partitionOf: binding.partitionOf }),
        ...(binding.priorityOf === undefined ? {} : { priorityOf: binding.priorityOf }),
        paused: parts?.flow.isPaused(binding) ?? false,
        deadLetterKey: recovery?.deadLetterKeyFor(binding.stream) ?? (options.recovery.deadLetterKey ?? deadLetterKey)(binding.stream),
      })),
      freeSlots: slots?.freeSlots() ?? 0,
      inFlight: slots?.inFlightCount() ?? 0,
      recovery: stats === undefined ? null : { scheduled: options.recovery.enabled, ticks: stats.ticks, failedTicksInARow: stats.failedTicksInARow, lastTickAt: stats.lastTickAt, lastError: stats.lastError },
    });
  }

  /** Counts recovery's events and draws dead letters on their entries' traces; starts the gauges. */
  observe(telemetry: Telemetry, commands: RedisClient): void {
    const { events } = this.server;
    events.on('deadLetter', (notice) => deadLettered(telemetry, notice as DeadLetterNotice, commands));
    events.on('recovered', (notice) => telemetry.recovered(notice as RecoveredNotice));
    events.on('entriesLost', (notice) => telemetry.lost(notice as EntriesLostNotice));
    const meter = telemetry.meter;
    if (meter !== undefined) {
      this.gauges = new GroupGauges(meter, commands, () => this.liveness().streams, this.server.options.telemetry.gaugeInterval);
    }
  }

  /** Stops the gauges (at `close()`). */
  stop(): void {
    this.gauges?.stop();
  }
}

/** Counts a dead letter and draws it on its entry's trace, from the headers its record keeps (tracing on). */
function deadLettered(telemetry: Telemetry, notice: DeadLetterNotice, commands: RedisClient): void {
  telemetry.deadLettered(notice);
  if (!telemetry.tracesDeadLetter(notice)) return;
  void deadLetterHeaders(commands, notice.deadLetterKey, notice.deadLetterId).then((headers) => telemetry.traceDeadLetter(notice, headers));
}

/** The producer's headers kept in a dead-letter record (its trace context), or undefined. */
async function deadLetterHeaders(redis: RedisClient, key: string, id: string): Promise<Headers | undefined> {
  try {
    const rows = (await redis.xrange(key, id, id)) as Array<[string, string[]]>;
    const row = rows[0];
    const letter = row === undefined ? undefined : parseDeadLetter(row[0], row[1]);
    const fields = letter?.fields;
    const json = fields === undefined || Array.isArray(fields) ? undefined : fields.headers;
    if (json === undefined) return undefined;
    const headers = JSON.parse(json) as unknown;
    return headers !== null && typeof headers === 'object' ? (headers as Headers) : undefined;
  } catch {
    return undefined;
  }
}
