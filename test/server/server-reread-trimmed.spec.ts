import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { describe, expect, it } from 'vitest';
import type { EntriesLostNotice } from '../../src/recovery/recovery-events.js';
import { startServer } from '../fixtures/server-app.js';
import { pendingCount, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const handled: number[] = [];

@Controller()
class RereadController {
  @EventPattern<string>('reread')
  on(@Payload() data: { n: number }): void {
    handled.push(data.n);
  }
}

describe('a restart that re-reads its own pending entries', () => {
  const redis = useRedisServer();

  it('reports pending entries deleted meanwhile as entriesLost, acks them away, and handles the rest', async () => {
    await redis.client.xgroup('CREATE', 'reread', 'g', '0', 'MKSTREAM');
    const ids: string[] = [];
    for (let n = 0; n < 4; n++) ids.push((await xaddEvent(redis.client, 'reread', 'reread', { n })) as string);
    // "w" read them and crashed; then two were deleted (XDEL, or trimmed by MAXLEN).
    await redis.client.xreadgroup('GROUP', 'g', 'w', 'COUNT', 10, 'STREAMS', 'reread', '>');
    await redis.client.xdel('reread', ids[0]!, ids[2]!);

    const lost: EntriesLostNotice[] = [];
    const { app } = await startServer({ connection: redis.server.url, group: 'g', consumer: 'w', blockMs: 200, recovery: false }, [RereadController], [], (server) =>
      server.on('entriesLost', (notice: EntriesLostNotice) => lost.push(notice)),
    );
    try {
      await waitFor(() => handled.length === 2 && lost.length > 0, 'the two live entries handled and the loss reported');
      expect(handled.sort()).toEqual([1, 3]);
      expect(lost).toEqual([{ stream: 'reread', group: 'g', reason: 'trimmed_pending', count: 2, ids: [ids[0], ids[2]] }]);
      await waitFor(async () => (await pendingCount(redis.client, 'reread', 'g')) === 0, 'nothing pending');
    } finally {
      await app.close();
    }
  });
});
