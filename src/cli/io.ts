/** Where the CLI writes; tests and embedding callers can capture it. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Environment variables (REDIS_URL). */
  env: NodeJS.ProcessEnv;
  /** Reads all of standard input (for `--ids-from -`). */
  readStdin(): Promise<string>;
  /**
   * Standard output when it is a terminal: tables instead of JSON, and the screen `top` redraws.
   * Undefined when stdout is a pipe or a file, so scripts get JSON.
   */
  terminal?: NodeJS.WriteStream;
  /** Calls `handler` on Ctrl-C (SIGINT) until the returned function is called. */
  onInterrupt(handler: () => void): () => void;
}

export const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  readStdin: async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
  terminal: process.stdout.isTTY ? process.stdout : undefined,
  onInterrupt: (handler) => {
    process.on('SIGINT', handler);
    return () => process.off('SIGINT', handler);
  },
};
