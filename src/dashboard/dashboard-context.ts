import { Inject, Injectable } from '@nestjs/common';
import { StreamClaimer } from '../claim/stream-claimer.js';
import { StreamInspector } from '../claim/stream-inspector.js';
import type { RedisStreamsModuleOptions } from '../module/redis-streams-module.options.js';
import { REDIS_STREAMS_CONNECTION, REDIS_STREAMS_MODULE_OPTIONS } from '../tokens.js';
import { describeConnection, type RedisClient } from '../redis/connection.js';
import { connectionSecrets, Redactor } from '../redaction.js';
import { DeadLetterService } from '../recovery/dead-letter.service.js';
import { listeningServers } from '../server/liveness.js';
import type { ResolvedDashboardOptions } from './dashboard.options.js';
import { streamTargets, type HandledKeys } from './stream-targets.js';
import { REDIS_STREAMS_DASHBOARD_OPTIONS } from './tokens.js';

/**
 * What the dashboard's reads and actions share: the module's command connection
 * (`RedisStreamsModule.forRoot`), the inspector, claimer and dead-letter service built on it, and
 * the streams to show.
 */
@Injectable()
export class DashboardContext {
  readonly inspector: StreamInspector;
  readonly claimer: StreamClaimer;
  readonly deadLetters: DeadLetterService;
  /**
   * Cleans the errors an HTTP answer shows: of the connection's passwords, and of where it connects
   * (a connection failure names it, `cannot connect to Redis at <where>: …`), since no answer
   * carries the connection's URL, host or port (docs/dashboard.md). Logs keep the location.
   */
  readonly answerRedactor: Redactor;

  constructor(
    @Inject(REDIS_STREAMS_CONNECTION) readonly redis: RedisClient,
    @Inject(REDIS_STREAMS_MODULE_OPTIONS) moduleOptions: RedisStreamsModuleOptions,
    @Inject(REDIS_STREAMS_DASHBOARD_OPTIONS) readonly options: ResolvedDashboardOptions,
  ) {
    this.inspector = new StreamInspector(redis);
    this.claimer = new StreamClaimer(redis, moduleOptions);
    // The module's dead-letter key setting, as the servers RedisStreamsServerFactory builds use.
    this.deadLetters = new DeadLetterService(redis, moduleOptions.deadLetters ?? {});
    this.answerRedactor = new Redactor([...connectionSecrets(redis), describeConnection(moduleOptions.connection)]);
  }

  /**
   * The streams to show. "The streams the handlers read" come from every server listening in this
   * process (`server.liveness()`, the registry the health indicator uses; no Redis command).
   */
  targets(named: readonly string[] = []): HandledKeys {
    return streamTargets(listeningServers, this.options.streams, named);
  }

  /** The dead-letter key a stream key's server writes to, else the module's setting. */
  deadLetterKeyOf(keys: HandledKeys): (key: string) => string {
    return (key) => keys.deadLetterKeys.get(key) ?? this.deadLetters.deadLetterKeyFor(key);
  }

  /** `deadLetterKey` for DeadLetterService calls: the server's key of a handled stream, else its own. */
  deadLetterKeyOption(stream: string): { deadLetterKey?: string } {
    const key = this.targets().deadLetterKeys.get(stream);
    return key === undefined ? {} : { deadLetterKey: key };
  }
}
