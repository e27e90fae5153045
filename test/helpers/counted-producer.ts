import { lastValueFrom } from 'rxjs';
import type { RedisStreamsClient } from '../../src/client/redis-streams-client.js';

/**
 * A producer for fault tests: emits 0, 1, 2 … to `stream` until stopped, one at a time, and counts
 * what Redis acknowledged (number → entry id, and back) and what failed (messages). After a failure
 * it waits `pauseAfterFailureMs`, so a dead server is not hammered with thousands of emits.
 */
export interface CountedProducer {
  readonly acknowledged: Map<number, string>;
  readonly byId: Map<string, number>;
  readonly failures: string[];
  /** Stops after the emit in progress; resolves when it is done (idempotent). */
  stop(): Promise<void>;
}

export function startCountedProducer(client: RedisStreamsClient, stream: string, pauseAfterFailureMs = 0): CountedProducer {
  const acknowledged = new Map<number, string>();
  const byId = new Map<string, number>();
  const failures: string[] = [];
  let producing = true;
  const loop = (async () => {
    for (let n = 0; producing; n++) {
      try {
        const id = (await lastValueFrom(client.emit(stream, n))) as string;
        acknowledged.set(n, id);
        byId.set(id, n);
      } catch (error) {
        failures.push((error as Error).message);
        if (pauseAfterFailureMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseAfterFailureMs));
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  })();
  return {
    acknowledged,
    byId,
    failures,
    stop: () => {
      producing = false;
      return loop;
    },
  };
}
