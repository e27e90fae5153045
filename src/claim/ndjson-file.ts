import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * An append-only NDJSON file. `write` resolves once the chunk is queued within the stream's
 * high-water mark, so a producer that awaits it never holds more than about one chunk in memory.
 */
export class NdjsonFile {
  private failure?: Error;

  private constructor(
    readonly path: string,
    private readonly stream: WriteStream,
  ) {
    stream.on('error', (error) => (this.failure ??= error));
  }

  /** Creates a new file (never overwrites one) named after `label` in `directory`. */
  static async create(directory: string, label: string): Promise<NdjsonFile> {
    await mkdir(directory, { recursive: true });
    const name = `${safeName(label)}-${Date.now()}-${randomUUID().slice(0, 8)}.ndjson`;
    const path = join(directory, name);
    const stream = createWriteStream(path, { flags: 'wx', encoding: 'utf8' });
    await once(stream, 'open');
    return new NdjsonFile(path, stream);
  }

  get uri(): string {
    return pathToFileURL(this.path).href;
  }

  async write(chunk: string): Promise<void> {
    if (this.failure) throw this.failure;
    if (!this.stream.write(chunk)) await once(this.stream, 'drain');
  }

  /** Flushes and closes; rejects if any write failed. */
  async close(): Promise<void> {
    if (this.failure) throw this.failure;
    this.stream.end();
    await once(this.stream, 'close');
    if (this.failure) throw this.failure;
  }

  /** Closes and removes the file (a failed run leaves nothing behind). */
  async discard(): Promise<void> {
    this.stream.destroy();
    if (!this.stream.closed) await once(this.stream, 'close').catch(() => undefined);
    await rm(this.path, { force: true });
  }
}

function safeName(label: string): string {
  const cleaned = label.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80);
  return cleaned.length > 0 ? cleaned : 'stream';
}
