/** Where the CLI writes; tests and embedding callers can capture it. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Environment variables (REDIS_URL). */
  env: NodeJS.ProcessEnv;
  /** Reads all of standard input (for `--ids-from -`). */
  readStdin(): Promise<string>;
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
};
