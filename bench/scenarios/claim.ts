import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '../clock.js';
import type { BenchContext, Contender, RunResult, Scenario } from '../measure.js';
import { fillStream } from '../producers.js';
import { ensureGroup } from '../raw-loop.js';
import { streamsPieces } from '../streams.js';
import { WorkerProcess } from '../worker-process.js';

const KEY = 'bench:claim';
const GROUP = 'bench';
/** Entries per XAUTOCLAIM page, for the raw loop and for StreamClaimService alike. */
const PAGE = 1_000;

/**
 * Claim of N pending entries (delivered to a consumer that never acks). Each run is a fresh child
 * process that only claims; it reports the time of the claim and its peak RSS. Every run takes all
 * entries again (minIdleTime 1 ms), from whoever took them last.
 */
export function claimScenario(fetchType: 'NONE' | 'STORE'): Scenario {
  let dir = '';
  return {
    id: `claim-${fetchType.toLowerCase()}`,
    title: `claim of pending entries, fetchType ${fetchType}`,
    reference: 'raw',
    setup: async (ctx) => {
      dir = mkdtempSync(join(tmpdir(), 'nrs-bench-claim-'));
      await preparePending(ctx);
    },
    teardown: async (ctx) => {
      rmSync(dir, { recursive: true, force: true });
      await ctx.admin.del(KEY);
    },
    contenders: (ctx) => [
      contender(ctx, 'raw', `raw XAUTOCLAIM loop (COUNT ${PAGE})`, 'claim-raw', fetchType, () => dir),
      {
        ...contender(ctx, 'streams', `StreamClaimService.claim ${fetchType}`, 'claim-streams', fetchType, () => dir),
        ...(streamsPieces.claim ? {} : { unavailable: 'StreamClaimService has not landed yet' }),
      },
    ],
  };
}

/** N entries, all delivered to consumer `crashed` and never acked. */
async function preparePending(ctx: BenchContext): Promise<void> {
  const total = ctx.config.claimEntries;
  await ctx.admin.del(KEY);
  await fillStream(ctx.admin, KEY, total);
  await ensureGroup(ctx.admin, KEY, GROUP);
  let delivered = 0;
  while (delivered < total) {
    const reply = (await ctx.admin.xreadgroup('GROUP', GROUP, 'crashed', 'COUNT', 10_000, 'STREAMS', KEY, '>')) as
      | [string, unknown[]][]
      | null;
    const got = reply?.[0]?.[1].length ?? 0;
    if (got === 0) break;
    delivered += got;
  }
  if (delivered !== total) throw new Error(`only ${delivered} of ${total} entries became pending`);
}

function contender(
  ctx: BenchContext,
  impl: string,
  label: string,
  script: string,
  fetchType: string,
  dir: () => string,
): Contender {
  return {
    impl,
    label,
    run: async (round): Promise<RunResult> => {
      await sleep(5); // minIdleTime is 1 ms: every entry qualifies again
      const storePath = join(dir(), `${impl}-${round}.ndjson`);
      const result = await WorkerProcess.runOnce(
        script,
        {
          redisUrl: ctx.server.url,
          key: KEY,
          group: GROUP,
          recordLatency: false,
          options: { fetchType, consumer: `rescuer-${impl}-${round}`, minIdleTime: 1, count: PAGE, storePath, storeDir: dir() },
        },
        300_000,
      );
      rmSync(storePath, { force: true });
      const claimed = result.claimed ?? 0;
      if (claimed !== ctx.config.claimEntries) throw new Error(`claimed ${claimed} of ${ctx.config.claimEntries} entries`);
      return {
        msgsPerSec: claimed / ((result.elapsedNs ?? Number.NaN) / 1e9),
        peakRssMb: (result.maxRssKb ?? Number.NaN) / 1024,
        rssGrowthMb: ((result.maxRssKb ?? Number.NaN) - (result.rssBeforeKb ?? Number.NaN)) / 1024,
        extra: { pages: result.pages ?? Number.NaN },
      };
    },
  };
}
