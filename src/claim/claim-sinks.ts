import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClaimedFields, ClaimedMessage, FetchType } from './claim.types.js';
import { claimedFields, type FieldEncoding, type FieldsFormat } from './claimed-fields.js';
import { NdjsonFile } from './ndjson-file.js';
import type { AutoclaimEntry } from './xautoclaim-reply.js';

export const DEFAULT_STORE_DIRECTORY = join(tmpdir(), 'nestjs-redis-streams');

/** Where the entries of one page go, by fetch type. The claim loop only sees this interface. */
export interface ClaimSink {
  /** Takes one page's entries; awaiting it applies the sink's backpressure. */
  accept(entries: readonly AutoclaimEntry[]): void | Promise<void>;
  /** The fetch-type specific result fields (`messages`, `message`, `uri` or none). */
  finish(): Promise<Record<string, unknown>>;
  /** The run failed: release what the sink holds. */
  abort(): Promise<void>;
}

/** How a sink shapes an entry: `{ stream, id, fields }` with fields in the requested format and encoding. */
export interface MessageShape {
  readonly stream: string;
  readonly fieldsFormat: FieldsFormat;
  readonly encoding: FieldEncoding;
}

export function toMessage(shape: MessageShape, entry: AutoclaimEntry): ClaimedMessage<ClaimedFields> {
  return { stream: shape.stream, id: entry.id, fields: claimedFields(entry.flat, shape.fieldsFormat, shape.encoding) };
}

export async function createSink(fetchType: FetchType, shape: MessageShape, storeDirectory: string): Promise<ClaimSink> {
  switch (fetchType) {
    case 'FETCH':
      return new FetchSink(shape);
    case 'FETCH_ONE':
      return new FetchOneSink(shape);
    case 'NONE':
      return new NoneSink();
    case 'STORE':
      return new StoreSink(shape, await NdjsonFile.create(storeDirectory, shape.stream));
  }
}

class FetchSink implements ClaimSink {
  private readonly messages: ClaimedMessage<ClaimedFields>[] = [];

  constructor(private readonly shape: MessageShape) {}

  accept(entries: readonly AutoclaimEntry[]): void {
    for (const entry of entries) this.messages.push(toMessage(this.shape, entry));
  }

  finish(): Promise<Record<string, unknown>> {
    return Promise.resolve({ messages: this.messages });
  }

  abort(): Promise<void> {
    return Promise.resolve();
  }
}

class FetchOneSink implements ClaimSink {
  private message: ClaimedMessage<ClaimedFields> | null = null;

  constructor(private readonly shape: MessageShape) {}

  accept(entries: readonly AutoclaimEntry[]): void {
    const first = entries[0];
    if (this.message === null && first !== undefined) this.message = toMessage(this.shape, first);
  }

  finish(): Promise<Record<string, unknown>> {
    return Promise.resolve({ message: this.message });
  }

  abort(): Promise<void> {
    return Promise.resolve();
  }
}

/** Bodies are dropped; the claim itself (delivery count + 1, new owner) is the same as FETCH. */
class NoneSink implements ClaimSink {
  accept(): void {}

  finish(): Promise<Record<string, unknown>> {
    return Promise.resolve({});
  }

  abort(): Promise<void> {
    return Promise.resolve();
  }
}

/** One `{stream,id,fields}` JSON a line; a page is written before the next one is fetched. */
class StoreSink implements ClaimSink {
  constructor(
    private readonly shape: MessageShape,
    private readonly file: NdjsonFile,
  ) {}

  async accept(entries: readonly AutoclaimEntry[]): Promise<void> {
    let chunk = '';
    for (const entry of entries) chunk += JSON.stringify(toMessage(this.shape, entry)) + '\n';
    await this.file.write(chunk);
  }

  async finish(): Promise<Record<string, unknown>> {
    await this.file.close();
    return { uri: this.file.uri };
  }

  abort(): Promise<void> {
    return this.file.discard();
  }
}
