import { promoteDue } from '../../src/delayed/promote.js';
import type { RedisServerProcess } from './redis-server.js';

/**
 * `count` connections calling the promotion of `stream` in a loop from Redis time `startMs` until
 * `forMs` later (each on its own connection, as that many workers would); resolves with the
 * latest Redis time a promoter saw, to bound the occurrences that were due.
 */
export async function raceToPromote(server: RedisServerProcess, stream: string, count: number, startMs: number, forMs: number): Promise<number> {
  const promoters = Array.from({ length: count }, () => server.client());
  let end = startMs;
  try {
    await Promise.all(
      promoters.map(async (promoter) => {
        for (;;) {
          const result = await promoteDue(promoter, stream);
          if (result.nowMs - startMs >= forMs) {
            end = Math.max(end, result.nowMs);
            return;
          }
        }
      }),
    );
  } finally {
    for (const promoter of promoters) promoter.disconnect();
  }
  return end;
}
