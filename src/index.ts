export {
  RedisStreamsCapabilityError,
  RedisStreamsConnectionError,
  RedisStreamsDecodeError,
  RedisStreamsMissingCommandError,
  RedisStreamsOptionError,
  RedisStreamsPartitionedStreamError,
  RedisStreamsPartitionMetadataError,
  RedisStreamsPartitionMismatchError,
} from './errors.js';
export type { RedisConnection } from './redis/connection.js';
export type { RedisCommandName, RedisStreamsCapabilities } from './redis/capabilities.js';
export type { RedisClusterConnection } from './redis/cluster-connection.js';
export { deadLetterKey } from './redis/keys.js';
export { MAX_PARTITIONS, partitionIndexOf, partitionsMetadataKey, partitionStreamKey, partitionStreamKeys } from './partitions/partition-keys.js';
export { defaultPriorityOf, MAX_PRIORITIES, priorityStreamKey, priorityStreamKeys } from './priorities/priority-lanes.js';
export { WireField } from './codec/wire-format.js';
export type { Headers, StreamFields } from './codec/wire-format.js';
export { RedisStreamsClient } from './client/redis-streams-client.js';
export type { RedisStreamsClientEvents, RedisStreamsClientStatus } from './client/redis-streams-client.js';
export type { RedisStreamsClientOptions } from './client/redis-streams-client.options.js';
export type { IdempotenceOptions } from './client/idempotent-emit.js';
export { RedisStreamsClientModule } from './client/redis-streams-client.module.js';
export type {
  RedisStreamsClientAsyncRegistration,
  RedisStreamsClientRegistration,
} from './client/redis-streams-client.module.js';
export { RedisStreamsRecord, RedisStreamsRecordBuilder } from './client/redis-streams-record.js';
export { RedisStreamsScheduler } from './client/redis-streams-scheduler.js';
export type { ScheduledEntry, ScheduleOptions } from './client/redis-streams-scheduler.js';
export type { HeldCron } from './delayed/delayed-inspection.js';
export type { RedisStreamsRecordOptions } from './client/redis-streams-record.js';
export type { RepeatOptions } from './delayed/repeat-option.js';
export type { MaxAgeTrimming, MaxLenTrimming, StreamTrimming } from './client/trimming.js';
export {
  NO_MESSAGE_HANDLER,
  RedisStreamsNoHandlerError,
  RedisStreamsPublishError,
  RedisStreamsReplyDecodeError,
  RedisStreamsTimeoutError,
} from './client/errors.js';
export type { RawReply } from './client/raw-reply.js';
export { RedisStreamsServer, REDIS_STREAMS_TRANSPORT } from './server/redis-streams.server.js';
// Pause / resume a stream's group for every worker from any process with a Redis client (an admin
// API that runs no server): the same state as `server.pause()` and the CLI's `pause`.
export {
  pauseGroup as pauseStreamGroup,
  pausedGroupsOf as pausedStreamGroups,
  resumeGroup as resumeStreamGroup,
} from './flow/pause-state.js';
export type { RedisStreamsConnections, RedisStreamsServerEvents } from './server/redis-streams.server.js';
export type { AckMode, RedisStreamsServerOptions, WorkQueuePolicy } from './server/options.js';
export type { RawMode, RedisStreamsHandlerExtras } from './server/handler-extras.js';
export type { GlobalConcurrencyOption, RateLimitOption } from './flow/flow-options.js';
export type { RedisStreamsStatus } from './server/connection-status.js';
export type { TelemetryOptions } from './telemetry/telemetry-options.js';
export type {
  ConnectionLiveness,
  ReaderLiveness,
  RecoveryLiveness,
  RedisStreamsLiveness,
  StreamLiveness,
} from './server/liveness.js';
export { RedisStreamsContext, type NackOptions } from './server/context.js';
export { idempotencyRecordKey } from './server/idempotency.js';
export type { IdempotencyOption } from './server/idempotency-options.js';
export type { RedisStreamsMessage } from './server/context.js';
export { RedisStreamsBatchContext } from './server/batch/batch-context.js';
export type { RedisStreamsBatchEntry } from './server/batch/batch-context.js';
export type { BatchOption } from './server/batch/batch-options.js';
export type { RawFields } from './server/in-flight.js';
export { JsonStreamDeserializer } from './codec/stream-deserializer.js';
export type { DecodedEntry, StreamDeserializer, StreamEntryOrigin } from './codec/stream-deserializer.js';
export { decodeReply, encodeReply } from './codec/reply.js';
export type { DecodedReply, ReplyPacket } from './codec/reply.js';
export {
  DeadLetterService,
  REDIS_STREAMS_DEAD_LETTER_OPTIONS,
} from './recovery/dead-letter.service.js';
export type {
  DeadLetterFieldsOptions,
  DeadLetterKeyOption,
  DeadLetterPage,
  DeadLetterSelection,
  DeadLetterServiceOptions,
  InspectDeadLetterOptions,
  ListDeadLettersOptions,
  PurgeResult,
  RedriveResult,
  RedriveStatus,
} from './recovery/dead-letter.service.js';
export { DEAD_LETTER_HEADER, RedriveHistoryField } from './recovery/dead-letter-format.js';
export type { DeadLetter, DeadLetterReason } from './recovery/dead-letter-format.js';
export { entryStatus } from './lifecycle/entry-status.js';
export type { CancelOptions, CancelOutcome } from './lifecycle/cancel.js';
export { RedisStreamsProgressError, MAX_PROGRESS_BYTES } from './lifecycle/lifecycle-records.js';
export type { EntryProgressRecord, EntryResultRecord, KeepResultsOption } from './lifecycle/lifecycle-records.js';
export type { ResultOptions } from './lifecycle/record-reader.js';
export { RedisStreamsAbortError, RedisStreamsHandlerTimeoutError, type DeliveryAbortReason } from './lifecycle/delivery-abort.js';
export type { EntryDeadLetter, EntryState, EntryStatus, EntryStatusOptions, EntryStreams, GroupEntryStatus } from './lifecycle/entry-status.js';
export { moveToDeadLetter, RedisStreamsDeadLetterError } from './recovery/dead-letter-move.js';
export type {
  DeadLetterMoveOutcome,
  DeadLetterMoveResult,
  DeadLetterMoveStatus,
  MoveToDeadLetterRequest,
} from './recovery/dead-letter-move.js';
export { handOffEntries, renewLeases } from './recovery/leases.js';
export type { HandOffRequest, HandOffResult, LeaseRenewal, LeaseRequest, LostLease, LostLeaseReason } from './recovery/leases.js';
export { reapConsumers } from './recovery/consumer-reaper.js';
export type { ReapConsumersRequest, ReapResult, ReapStatus } from './recovery/consumer-reaper.js';
export { RedisStreamsRecovery } from './recovery/redis-streams-recovery.js';
export { OnDeadLetter } from './recovery/on-dead-letter.decorator.js';
export type { RecoverySelector, ServerRecoveryStats } from './recovery/redis-streams-recovery.js';
export type { RecoveryOptions, ReapConsumersOptions } from './recovery/recovery-options.js';
export type { DeadLetterKeySetting } from './recovery/dead-letter-key-option.js';
export type { ExponentialRetryPolicy, FixedRetryPolicy, RetryDelayFunction, RetryPolicy } from './recovery/retry-policy.js';
export type { RecoveryStats, RecoveryTickResult } from './recovery/recovery-stats.js';
export type {
  DeadLetterNotice,
  EntriesLostNotice,
  EntriesLostReason,
  LeaseLostNotice,
  RecoveredNotice,
} from './recovery/recovery-events.js';
export { RedisStreamsModule } from './module/redis-streams.module.js';
export type {
  RedisStreamsModuleAsyncOptions,
  RedisStreamsModuleOptions,
  RedisStreamsModuleRootOptions,
} from './module/redis-streams-module.options.js';
export { RedisStreamsServerFactory } from './module/redis-streams-server.factory.js';
export { REDIS_STREAMS_CONNECTION, REDIS_STREAMS_MODULE_OPTIONS } from './tokens.js';
export { StreamClaimService, StreamInspectionService } from './module/claim-services.js';
export { RedisStreamsClaimError } from './claim/claim.errors.js';
export type { ClaimFailureReason } from './claim/claim.errors.js';
export type {
  ClaimedMessage,
  ClaimModuleOptions,
  ClaimOptions,
  ClaimResult,
  ClaimResultBase,
  ClaimResultFor,
  FetchClaimResult,
  FetchOneClaimResult,
  FetchType,
  ClaimedFields,
  FieldEncoding,
  FieldsFormat,
  FieldsOf,
  NoneClaimResult,
  StoreClaimResult,
  StreamClaimServiceOptions,
  StreamFieldPairs,
} from './claim/claim.types.js';
export type {
  ConsumerInfo,
  GroupInfo,
  PendingEntry,
  PendingRangeOptions,
  PendingRetry,
  PendingSummary,
  StreamInfo,
} from './claim/inspection.types.js';
