/** A failure the CLI reports as one line; `exitCode` 2 for bad usage, 1 for everything else. */
export class CliError extends Error {
  override readonly name = 'CliError';

  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}
