import type { Redis } from 'ioredis';

type Chunk = string | Buffer | Uint8Array;
type Sink = {
  _write: (chunk: Chunk, ...rest: unknown[]) => void;
  _writev: (chunks: { chunk: Chunk }[], ...rest: unknown[]) => void;
};

/**
 * Records what reaches a client's socket: one `_write` or `_writev` per write to the kernel
 * (commands buffered while the socket is corked are one write, when it is uncorked), with the
 * text of each write.
 */
export function recordSocketWrites(redis: Redis): { writes: string[]; count: () => number; reset: () => void; restore: () => void } {
  const socket = redis.stream as unknown as Sink;
  const { _write: write, _writev: writev } = socket;
  const writes: string[] = [];
  socket._write = function (this: unknown, chunk: Chunk, ...rest: unknown[]) {
    writes.push(Buffer.from(chunk).toString());
    return write.call(this, chunk, ...rest);
  };
  socket._writev = function (this: unknown, chunks: { chunk: Chunk }[], ...rest: unknown[]) {
    writes.push(chunks.map(({ chunk }) => Buffer.from(chunk).toString()).join(''));
    return writev.call(this, chunks, ...rest);
  };
  return {
    writes,
    count: () => writes.length,
    reset: () => {
      writes.length = 0;
    },
    restore: () => {
      socket._write = write;
      socket._writev = writev;
    },
  };
}
