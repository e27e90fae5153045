/** Waits until `condition` holds, polling every `interval` ms; fails after `timeout` ms with `what`. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  what: string,
  { timeout = 10_000, interval = 20 }: { timeout?: number; interval?: number } = {},
): Promise<void> {
  const deadline = Date.now() + timeout;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
