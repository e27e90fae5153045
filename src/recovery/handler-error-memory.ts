/**
 * The last handler error per pending entry, in memory and bounded (oldest forgotten first), so a
 * dead letter can say why the entry kept failing. Only failures seen by this process are known.
 */
export class HandlerErrorMemory {
  private readonly errors = new Map<string, string>();

  constructor(private readonly capacity = 10_000) {}

  record(stream: string, group: string, id: string, error: string): void {
    const key = keyOf(stream, group, id);
    this.errors.delete(key); // re-insert: newest last
    this.errors.set(key, error);
    if (this.errors.size > this.capacity) {
      const oldest = this.errors.keys().next().value as string;
      this.errors.delete(oldest);
    }
  }

  get(stream: string, group: string, id: string): string | undefined {
    return this.errors.get(keyOf(stream, group, id));
  }

  forget(stream: string, group: string, id: string): void {
    this.errors.delete(keyOf(stream, group, id));
  }
}

function keyOf(stream: string, group: string, id: string): string {
  return `${stream}\u0000${group}\u0000${id}`;
}

/**
 * A handler's error for a dead letter: `Class: message` of an Error (an `RpcException`'s object
 * as JSON), otherwise as `errorText` (bounded in length).
 */
export function handlerErrorText(error: unknown, limit = 2_000): string {
  if (!(error instanceof Error)) return errorText(error, limit);
  const name = error.constructor?.name || error.name;
  const detail = (error as { getError?: () => unknown }).getError?.();
  const message = detail !== null && typeof detail === 'object' && typeof (detail as { message?: unknown }).message !== 'string'
    ? errorText(detail, limit)
    : error.message;
  const text = `${name}: ${message}`;
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

/** Error text for a dead letter: message of an Error, otherwise JSON (bounded in length). */
export function errorText(error: unknown, limit = 2_000): string {
  let text: string;
  if (error instanceof Error) text = error.message;
  else if (typeof error === 'string') text = error;
  else if (error !== null && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') {
    // What Nest's RPC exception filter hands back: `{ status: 'error', message }`.
    text = (error as { message: string }).message;
  } else {
    try {
      text = JSON.stringify(error) ?? String(error);
    } catch {
      text = String(error);
    }
  }
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}
