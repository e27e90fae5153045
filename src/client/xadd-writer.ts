import { streamKeyFor } from '../redis/keys.js';
import { RedisStreamsOptionError, RedisStreamsPartitionMetadataError, RedisStreamsPartitionMismatchError } from '../errors.js';
import type { Redactor } from '../redaction.js';
import { trimmingUnsupported } from './capability-needs.js';
import { RedisStreamsPublishError } from './errors.js';
import { carriesIdmp, sendWithRetries } from './idempotent-emit.js';
import type { ProducerConnection, XAddArgs } from './producer-connection.js';
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
   * `[stream, NOMKSTREAM?, MAXLEN|MINID ~ n, '*']`, the start of an XADD (`stream`: the pattern's
   * stream or partition, see partition-router.ts); `undefined` while the
   * server clock that `maxAge` trimming needs is not known yet (only before the first TIME reply).
   */
  head(stream: string, trimming: CompiledTrimming, noMkStream: boolean, idmp: readonly string[] = []): XAddArgs | undefined {
    const args: XAddArgs = [stream];
    if (noMkStream) args.push('NOMKSTREAM');
    if (idmp.length > 0) args.push(...idmp);
    if (trimming.kind === 'maxLen') {
      args.push(trimming.args[0] as string, trimming.args[1] as string, trimming.args[2] as string);
      if (trimming.onlyAcked) {
        const unsupported = trimmingUnsupported(trimming, this.producer.capabilities, 'trim.onlyAcked');
        if (unsupported !== undefined) throw unsupported;
        args.push('ACKED');
      }
    } else if (trimming.kind === 'maxAge') {
      const now = this.producer.clock?.now();
      if (now === undefined) return undefined;
      const unsupported = trimmingUnsupported(trimming, this.producer.capabilities, 'trim.onlyAcked');
      if (unsupported !== undefined) throw unsupported;
      args.push(...minIdArgs(trimming, now));
    }
    args.push('*');
    return args;
  }

  send(args: XAddArgs): Promise<string | null> {
    const xadd = this.producer.xadd;
    if (!xadd) return Promise.reject(new Error('Connection closed'));
    // With an idempotency key (IDMP, only sent when the server has it) a retry cannot duplicate the entry.
    const idempotence = this.config.idempotence;
    if (idempotence === undefined || idempotence.retries === 0 || !carriesIdmp(args)) return xadd(args);
    return sendWithRetries(() => (this.producer.xadd ?? xadd)(args), idempotence.retries, idempotence.retryDelayMs);
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
