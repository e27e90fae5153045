/**
 * Calls `onTimeout` once `ms` have passed and the event loop then had one more turn to read the
 * sockets. After a long synchronous stall, a timer and a reply that came in time are both due, and
 * Node runs timers before it reads sockets: judged at once, the timer would win and report a
 * timeout for an answer that is already there. Deferred by one `setImmediate` (which runs after
 * the poll phase), pending replies are read first. Returns a function that cancels it.
 */
export function startTimeoutVerdict(onTimeout: () => void, ms: number): () => void {
  let immediate: NodeJS.Immediate | undefined;
  const timer = setTimeout(() => {
    immediate = setImmediate(onTimeout);
  }, ms);
  return () => {
    clearTimeout(timer);
    if (immediate !== undefined) clearImmediate(immediate);
  };
}

/** Settles like `promise`, or rejects with "<what> did not complete within <ms> ms"; the timer never outlives it. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let cancel: (() => void) | undefined;
  const timeout = new Promise<never>((_, reject) => {
    cancel = startTimeoutVerdict(() => reject(new DeadlineError(`${what} did not complete within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    cancel?.();
  }
}

/** What `withTimeout` rejects with: a deadline passed. `code` as a socket timeout has it, for callers that map codes. */
export class DeadlineError extends Error {
  readonly code = 'ETIMEDOUT';
}
