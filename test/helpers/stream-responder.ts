import type { Redis } from 'ioredis';
import { encodeReplyArgs, type ReplyPacket } from '../../src/codec/reply.js';
import { fieldsFromArray, type StreamFields } from '../../src/codec/wire-format.js';

type XRead = [string, [string, string[]][]][] | null;

/** One reply entry's fields, flat (`[name, value, …]`), strings or exact bytes. */
export type ReplyEntryFields = (string | Buffer)[];

/**
 * A responder written with plain ioredis, standing in for any service that answers requests: it
 * reads every request entry of one stream (XREAD, no group, so two responders on one stream both
 * see each request) and writes the entries `answer` returns to the request's `replyTo`, in order.
 */
export class StreamResponder {
  private stopped = false;
  private readonly loop: Promise<void>;
  readonly requests: StreamFields[] = [];

  constructor(
    private readonly reader: Redis,
    private readonly writer: Redis,
    private readonly stream: string,
    private readonly answer: (request: StreamFields) => ReplyEntryFields[],
  ) {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    let lastId = '0-0';
    while (!this.stopped) {
      const reply = (await this.reader.xread('BLOCK', 100, 'STREAMS', this.stream, lastId).catch(() => null)) as XRead;
      for (const [, entries] of reply ?? []) {
        for (const [id, flat] of entries) {
          lastId = id;
          const request = fieldsFromArray(flat);
          if (!request.replyTo || !request.id) continue;
          this.requests.push(request);
          for (const fields of this.answer(request)) {
            await this.writer.multi().xadd(request.replyTo, '*', ...fields).pexpire(request.replyTo, 60_000).exec();
          }
        }
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}

/** The fields of a reply in the default wire format. */
export function jsonReply(request: StreamFields, packet: ReplyPacket): ReplyEntryFields {
  return encodeReplyArgs(request.id as string, packet);
}

/** Settles `promise` or fails after `ms`: a request left waiting is a failure, not a slow pass. */
export async function settleWithin<T>(promise: Promise<T>, ms: number): Promise<{ value?: T; error?: unknown }> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms);
  });
  try {
    return { value: await Promise.race([promise, hang]) };
  } catch (error) {
    if ((error as Error).message === `still pending after ${ms} ms`) throw error;
    return { error };
  } finally {
    clearTimeout(timer);
  }
}
