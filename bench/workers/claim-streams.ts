// One-shot child: StreamClaimService.claim over every pending entry (runs of maxRecords 10000
// continued from the cursor until completed), with its peak RSS.
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { StreamClaimService } from '../../src/module/claim-services.js';
import type { FetchType } from '../../src/claim/claim.types.js';
import { nowNs } from '../clock.js';
import { memoryKb, runOnce } from './harness.js';

await runOnce(async (config) => {
  const options = config.options ?? {};
  const redis = new Redis(config.redisUrl);
  await redis.ping();
  const claims = new StreamClaimService(redis, { storeDirectory: String(options.storeDir) });
  const fetchType = String(options.fetchType) as FetchType;
  const before = memoryKb();
  const start = nowNs();
  let cursor = '0-0';
  let claimed = 0;
  let pages = 0;
  const files: string[] = [];
  for (;;) {
    const result = await claims.claim({
      key: config.key,
      group: config.group,
      consumer: String(options.consumer),
      minIdleTime: Number(options.minIdleTime),
      count: Number(options.count),
      maxRecords: 10_000,
      maxPages: 1_000,
      startId: cursor,
      fetchType,
    });
    claimed += result.count;
    pages += result.pages;
    if ('uri' in result && typeof result.uri === 'string') files.push(fileURLToPath(result.uri));
    if (result.completed) break;
    cursor = result.cursor;
  }
  const elapsedNs = nowNs() - start;
  const after = memoryKb();
  for (const file of files) rmSync(file, { force: true });
  await redis.quit();
  return { claimed, pages, elapsedNs, rssBeforeKb: before.rssKb, maxRssKb: after.maxRssKb, files: files.length };
});
