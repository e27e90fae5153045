import { streamKeyFor } from '../redis/keys.js';
import { RedisStreamsOptionError, RedisStreamsPartitionMetadataError, RedisStreamsPartitionMismatchError } from '../errors.js';
import type { Redactor } from '../redaction.js';
import type { RedisStreamsCapabilities } from '../redis/capabilities.js';
import { xaddUnsupported } from './capability-needs.js';
import { ConnectionClosedError } from './connection-closed.js';
import { RedisStreamsPublishError } from './errors.js';
import { idmpWordOf, sendWithRetries } from './idempotent-emit.js';
import { isThenable } from './outgoing-packet.js';
import type { ProducerConnection, XAdd, XAddArgs } from './producer-connection.js';
import type { ResolvedClientOptions } from './redis-streams-client.options.js';
import type { RedisStreamsRecordOptions } from './redis-streams-record.js';
import { compileTrimming, minIdArgs, type CompiledTrimming } from './trimming.js';

/** The XADDs of events and requests: their head (stream, NOMKSTREAM, IDMP, trimming), their sending and their errors. */
export class XAddWriter {
  constructor(
    private readonly config: ResolvedClientOptions,
    private readonly producer: ProducerConnection,
    private readonly redactor: Redactor,
    /** Nest's `normalizePattern`. */
    private readonly normalize: (pattern: unknown) => string,
  ) {}

  /** The call's own `trim`, else the pattern's, else the client's. */
  trimmingFor(pattern: string, options: RedisStreamsRecordOptions): CompiledTrimming {
    if (options.trim !== undefined) return compileTrimming('trim', options.trim);
    return this.config.trimming.get(pattern) ?? this.config.trim;
  }

  /**
   * `[stream, NOMKSTREAM?, IDMP…?, MAXLEN|MINID ~ n, ACKED?, '*']`, the start of an XADD
   * (`stream`: the pattern's stream or partition, see partition-router.ts); `undefined` while the
   * server clock that `maxAge` trimming needs is not known yet (only before the first TIME reply).
   * Whether the server has the words is checked when it is sent (`send`).
   */
  head(stream: string, trimming: CompiledTrimming, noMkStream: boolean, idmp: readonly string[] = []): XAddArgs | undefined {
    const args: XAddArgs = [stream];
    if (noMkStream) args.push('NOMKSTREAM');
    if (idmp.length > 0) args.push(...idmp);
    if (trimming.kind === 'maxLen') {
      args.push(trimming.args[0] as string, trimming.args[1] as string, trimming.args[2] as string);
      if (trimming.onlyAcked) args.push('ACKED');
    } else if (trimming.kind === 'maxAge') {
      const now = this.producer.clock?.now();
      if (now === undefined) return undefined;
      args.push(...minIdArgs(trimming, now));
    }
    args.push('*');
    return args;
  }

  /**
   * Sends an XADD (`trimming`: the one its head was built with). With an idempotency key (IDMP,
   * IDMPAUTO) a retry cannot duplicate the entry: those are sent again after a failure that may
   * or may not have written them, until `close()`.
   */
  send(args: XAddArgs, trimming: CompiledTrimming): Promise<string | null> {
    const { xadd, lifetime } = this.producer;
    if (!xadd || !lifetime) return Promise.reject(new ConnectionClosedError());
    const idempotence = this.config.idempotence;
    if (idempotence === undefined || idempotence.retries === 0 || idmpWordOf(args) === undefined) return this.attempt(xadd, args, trimming, lifetime);
    return sendWithRetries(() => this.attempt(xadd, args, trimming, lifetime), idempotence.retries, idempotence.retryDelayMs, lifetime);
  }

  /**
   * One XADD on the connection the call began on, checked against the server connected now
   * (every attempt: a failover can land on an older server, and its retry must then fail with
   * the capability error, not send words that server reads as something else). Right after a
   * reconnect one that carries such words waits for the re-probe.
   */
  private attempt(xadd: XAdd, args: XAddArgs, trimming: CompiledTrimming, lifetime: AbortSignal): Promise<string | null> {
    if (lifetime.aborted) return Promise.reject(new ConnectionClosedError());
    // Words every server has: nothing to check, nothing to wait for.
    if (!trimming.onlyAcked && idmpWordOf(args) === undefined) return xadd(args);
    const capabilities = this.producer.capabilitiesNow();
    if (!isThenable(capabilities)) return checkedXAdd(xadd, args, trimming, capabilities);
    return capabilities.then((probed) => {
      if (lifetime.aborted) throw new ConnectionClosedError();
      return checkedXAdd(xadd, args, trimming, probed);
    });
  }

  /** Failures name the stream; option errors, a partition count mismatch and invalid partition metadata stay as they are. */
  publishError(pattern: unknown, error: unknown): unknown {
    if (
      error instanceof RedisStreamsOptionError ||
      error instanceof RedisStreamsPublishError ||
      error instanceof RedisStreamsPartitionMismatchError ||
      error instanceof RedisStreamsPartitionMetadataError
    ) {
      return this.redactor.error(error);
    }
    const stream = streamKeyFor(this.normalize(pattern), this.config.streamPrefix);
    return this.redactor.error(new RedisStreamsPublishError(stream, this.redactor.error(error), this.producer.lastErrorCode));
  }
}

function checkedXAdd(xadd: XAdd, args: XAddArgs, trimming: CompiledTrimming, capabilities: RedisStreamsCapabilities | undefined): Promise<string | null> {
  const unsupported = xaddUnsupported(args, trimming, capabilities);
  return unsupported === undefined ? xadd(args) : Promise.reject(unsupported);
}
