import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { StreamInspector } from '../claim/stream-inspector.js';
import { delayedKeys } from '../delayed/delayed-keys.js';
import { redisNow } from '../redis/server-time.js';
import { listeningServers, type LivenessSource, type RedisStreamsLiveness } from '../server/liveness.js';
import { withTimeout } from '../timeout.js';
import { livenessProblems, pausedGroups, readinessProblems, thresholdProblems, type StreamCounts } from './health-verdict.js';
import { resolveHealthOptions, type RedisStreamsHealthOptions, type ResolvedHealthOptions } from './health.options.js';

/** What the indicator reports of one server (the `servers` array of its result). */
export interface ServerHealthReport {
  consumer: string;
  state: RedisStreamsLiveness['state'];
  /** Why it is down; empty when up. */
  problems: string[];
  /** ioredis status per connection (`ready` when usable). */
  connections: Record<string, string>;
  /** Per reader: whether a read is in flight, and ms since a read last returned (null: none yet). */
  readers: { group: string; reading: boolean; msSinceRead: number | null }[];
  /**
   * Groups paused for every worker (`nestjs-redis-streams pause`), as this server last read the
   * pause state; `stream` is the one the pause is on (a partitioned stream's name). Not a problem.
   */
  paused: { stream: string; group: string }[];
  /** `isHealthy` with thresholds: the counts read for each stream + group. */
  streams?: StreamCounts[];
}

/**
 * `@nestjs/terminus` health indicator of the `RedisStreamsServer`s of this process.
 * - `isAlive`: liveness (no Redis command): the server listens and no read loop is stuck.
 * - `isHealthy`: readiness: liveness, every connection ready, Redis answers PING, recovery ticks
 *   not failing in a row, and lag / pending / dead letters under the thresholds you set.
 * Both list paused groups in `paused`; a paused group is up (docs/observability.md says why).
 * See docs/observability.md.
 */
@Injectable()
export class RedisStreamsHealthIndicator {
  constructor(private readonly health: HealthIndicatorService) {}

  async isAlive<Key extends string = 'redis-streams'>(key: Key = 'redis-streams' as Key, options: RedisStreamsHealthOptions = {}): Promise<HealthIndicatorResult<Key>> {
    const resolved = resolveHealthOptions(options);
    const reports = servers(resolved).map((server) => {
      const liveness = server.liveness();
      return report(liveness, livenessProblems(liveness, resolved));
    });
    return this.verdict(key, reports);
  }

  async isHealthy<Key extends string = 'redis-streams'>(key: Key = 'redis-streams' as Key, options: RedisStreamsHealthOptions = {}): Promise<HealthIndicatorResult<Key>> {
    const resolved = resolveHealthOptions(options);
    const reports = await Promise.all(servers(resolved).map((server) => this.readiness(server, resolved)));
    return this.verdict(key, reports);
  }

  private async readiness(server: LivenessSource, options: ResolvedHealthOptions): Promise<ServerHealthReport> {
    const liveness = server.liveness();
    const problems = readinessProblems(liveness, options);
    if (liveness.state !== 'listening') return report(liveness, problems);
    const redis = server.commandConnection();
    try {
      await withTimeout(redis.ping(), options.timeoutMs, 'PING');
    } catch (error) {
      problems.push(`Redis: ${(error as Error).message}`);
      return report(liveness, problems);
    }
    const thresholds = options.thresholds;
    if (thresholds === undefined) return report(liveness, problems);
    const inspector = new StreamInspector(redis);
    try {
      const counts = await withTimeout(
        Promise.all(
          liveness.streams
            .filter(({ stream, group }) => thresholds(stream, group) !== undefined)
            .map((stream) => countsOf(inspector, redis, stream, thresholds(stream.stream, stream.group)?.delayedDue !== undefined)),
        ),
        options.timeoutMs,
        'lag / pending / dead-letter / delayed queries',
      );
      for (const count of counts) problems.push(...thresholdProblems(count, thresholds(count.stream, count.group)));
      return { ...report(liveness, problems), streams: counts };
    } catch (error) {
      problems.push(`Redis: ${(error as Error).message}`);
      return report(liveness, problems);
    }
  }

  private verdict<Key extends string>(key: Key, reports: ServerHealthReport[]): HealthIndicatorResult<Key> {
    const session = this.health.check(key);
    if (reports.length === 0) return session.down({ message: 'no RedisStreamsServer is listening in this process', servers: reports });
    return reports.some((entry) => entry.problems.length > 0) ? session.down({ servers: reports }) : session.up({ servers: reports });
  }
}

function servers(options: ResolvedHealthOptions): LivenessSource[] {
  if (options.server === undefined) return [...listeningServers];
  return [options.server];
}

function report(liveness: RedisStreamsLiveness, problems: string[]): ServerHealthReport {
  return {
    consumer: liveness.consumer,
    state: liveness.state,
    problems,
    connections: Object.fromEntries(liveness.connections.map(({ name, status }) => [name, status])),
    readers: liveness.readers.map((reader) => ({
      group: reader.group,
      reading: reader.reading,
      msSinceRead: reader.lastReadAt === null ? null : liveness.at - reader.lastReadAt,
    })),
    paused: pausedGroups(liveness),
  };
}

async function countsOf(
  inspector: StreamInspector,
  redis: ReturnType<LivenessSource['commandConnection']>,
  { stream, group, deadLetterKey }: RedisStreamsLiveness['streams'][number],
  /** Only with a `delayedDue` threshold: a worker's ACL from before delayed entries may not allow the query. */
  withDelayed: boolean,
): Promise<StreamCounts> {
  const [groups, deadLetters, delayedDue] = await Promise.all([
    inspector.groups(stream),
    redis.xlen(deadLetterKey),
    withDelayed ? dueNotPromoted(redis, stream) : undefined,
  ]);
  const info = groups.find((candidate) => candidate.name === group);
  const counts: StreamCounts = { stream, group, lag: info?.lag ?? null, pending: info?.pending ?? 0, deadLetters };
  return delayedDue === undefined ? counts : { ...counts, delayedDue };
}

/** Delayed entries of `stream` due on Redis' clock and still held. */
async function dueNotPromoted(redis: ReturnType<LivenessSource['commandConnection']>, stream: string): Promise<number> {
  return redis.zcount(delayedKeys(stream).schedule, '-inf', await redisNow(redis));
}
