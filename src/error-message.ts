/** The message of a thrown value: an `Error`'s message, anything else as a string (a throw need not be an `Error`). */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
