import type { ClaimedFields } from '../../claim/claim.types.js';
import type { DeadLetterPage } from '../../recovery/dead-letter.service.js';
import { formatInstant } from '../human-units.js';
import { formatTable, type Column } from '../table.js';

const ERROR_WIDTH = 60;

/** `dlq list` at a terminal: one row per dead letter, and how to get the next page. */
export function deadLetterPageView(key: string, page: DeadLetterPage<ClaimedFields>): string {
  if (page.deadLetters.length === 0) return `no dead letters of ${key} in ${page.deadLetterKey} in this range\n`;
  // A partitioned stream's page merges its partitions: each row says which one it came from.
  const partitioned = page.deadLetterKeys !== undefined;
  const columns: Column[] = [
    { header: 'DEAD-LETTER ID' },
    ...(partitioned ? [{ header: 'PARTITION' }] : []),
    { header: 'SOURCE ID' },
    { header: 'GROUP' },
    { header: 'CONSUMER' },
    { header: 'DELIVERIES', align: 'right' },
    { header: 'REASON' },
    { header: 'AT' },
    { header: 'ERROR' },
  ];
  let text = formatTable(
    columns,
    page.deadLetters.map((letter) => [
      letter.deadLetterId,
      ...(partitioned ? [letter.sourceStream] : []),
      letter.sourceId,
      letter.group,
      letter.consumer,
      letter.deliveryCount,
      letter.tombstone ? `${letter.reason} (body gone)` : letter.reason,
      formatInstant(letter.deadLetteredAt),
      shorten(letter.error),
    ]),
  );
  if (page.nextStart !== null) text += `\nmore: dlq list ${key} --start '${page.nextStart}'\n`;
  return text;
}

function shorten(text: string): string {
  const line = text.replace(/\s+/g, ' ');
  return line.length <= ERROR_WIDTH ? line : `${line.slice(0, ERROR_WIDTH - 1)}…`;
}
