import type { StreamFields } from '../codec/wire-format.js';
import { claimedFields, DEFAULT_FIELDS_SHAPE, type FieldsShape } from '../claim/claimed-fields.js';
import type { ClaimedFields } from '../claim/claim.types.js';

/**
 * How a dead letter is stored. An entry of the dead-letter stream is a fixed header of metadata
 * fields, always these names in this order, followed by the original entry's fields verbatim:
 *
 *   dlq:stream <source stream> dlq:id <source id> dlq:group <group> dlq:consumer <last owner>
 *   dlq:deliveries <n> dlq:reason <reason> dlq:error <text> dlq:at <ms, Redis TIME>
 *   dlq:fields <number of original field pairs> <original field 1> <value 1> ...
 *
 * The header is read by position, so original fields are restored exactly even when their names
 * start with `dlq:` or repeat a header name. A tombstone (the entry was trimmed while pending) has
 * the header only (`dlq:fields` 0, reason `trimmed`). Keep in step with dead-letter.lua and redrive.lua.
 */
export const DEAD_LETTER_HEADER = [
  'dlq:stream',
  'dlq:id',
  'dlq:group',
  'dlq:consumer',
  'dlq:deliveries',
  'dlq:reason',
  'dlq:error',
  'dlq:at',
  'dlq:fields',
] as const;

/** Fields a redrive appends to the re-added entry (older copies are replaced, not repeated). */
export const RedriveHistoryField = {
  /** Id of the dead letter the entry was redriven from. */
  redrivenFrom: 'dlq:redriven-from',
  /** Id the entry had in the source stream before it was dead-lettered. */
  previousId: 'dlq:previous-id',
  /** Delivery count it had reached. */
  previousDeliveries: 'dlq:previous-deliveries',
  previousReason: 'dlq:previous-reason',
  /** How many times this message has been redriven. */
  redrives: 'dlq:redrives',
} as const;

/** Why an entry was dead-lettered. Any other non-empty string is allowed too. */
export type DeadLetterReason = 'max_deliveries' | 'decode_error' | 'trimmed' | 'handler_error' | 'manual' | (string & {});

export interface DeadLetter<Fields extends ClaimedFields = StreamFields> {
  /** Id of the dead letter in the dead-letter stream (what redrive and purge take). */
  deadLetterId: string;
  sourceStream: string;
  /** Id the entry had in the source stream. */
  sourceId: string;
  group: string;
  /** Consumer that held the entry when it was moved. */
  consumer: string;
  /** Redis delivery count when it was moved. */
  deliveryCount: number;
  reason: DeadLetterReason;
  error: string;
  /** When it was moved: epoch milliseconds from the Redis server's clock. */
  deadLetteredAt: number;
  /** True when the body was gone (trimmed or deleted while pending): only the metadata is kept. */
  tombstone: boolean;
  /**
   * The original fields. Default `{ name: value }` (integer-like names first, the last of duplicate
   * names wins); with `fieldsFormat: 'pairs'` `[[name, value], …]` in stream order with every
   * duplicate, with `encoding: 'base64'` the exact bytes as base64. Empty for a tombstone.
   */
  fields: Fields;
}

/**
 * Parses one dead-letter stream entry (`XRANGE` row; Buffers when read for `base64`). Returns
 * `undefined` for an entry that does not carry the header (something else wrote to the
 * dead-letter stream). The original fields are shaped as a claim shapes them.
 */
export function parseDeadLetter(
  id: string,
  flat: readonly (string | Buffer)[],
  shape: FieldsShape = DEFAULT_FIELDS_SHAPE,
): DeadLetter<ClaimedFields> | undefined {
  const header = DEAD_LETTER_HEADER.length;
  if (flat.length < 2 * header) return undefined;
  const values: string[] = [];
  for (let i = 0; i < header; i++) {
    if (String(flat[2 * i]) !== DEAD_LETTER_HEADER[i]) return undefined;
    values.push(String(flat[2 * i + 1]));
  }
  const [sourceStream, sourceId, group, consumer, deliveries, reason, error, at] = values as [
    string, string, string, string, string, string, string, string,
  ];
  const fields = claimedFields(flat.slice(2 * header), shape.fieldsFormat, shape.encoding);
  return {
    deadLetterId: id,
    sourceStream,
    sourceId,
    group,
    consumer,
    deliveryCount: Number(deliveries),
    reason,
    error,
    deadLetteredAt: Number(at),
    tombstone: flat.length === 2 * header,
    fields,
  };
}
