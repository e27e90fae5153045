// One-shot child: the raw XAUTOCLAIM loop (COUNT per page, until the cursor returns to 0-0),
// discarding bodies (NONE) or writing them as NDJSON (STORE), with its peak RSS.
import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { nowNs } from '../clock.js';
import { memoryKb, runOnce } from './harness.js';

type Page = [cursor: string, entries: ([id: string, fields: string[]] | null)[], deleted?: string[]];

await runOnce(async (config) => {
  const options = config.options ?? {};
  const redis = new Redis(config.redisUrl);
  await redis.ping();
  const fetchType = String(options.fetchType);
  const file: WriteStream | undefined = fetchType === 'STORE' ? createWriteStream(String(options.storePath)) : undefined;
  const before = memoryKb();
  const start = nowNs();
  let cursor = '0-0';
  let claimed = 0;
  let pages = 0;
  do {
    const [next, entries] = (await redis.xautoclaim(
      config.key, config.group, String(options.consumer), Number(options.minIdleTime), cursor, 'COUNT', Number(options.count),
    )) as Page;
    pages++;
    cursor = next;
    for (const entry of entries) {
      if (!entry) continue;
      claimed++;
      if (file) {
        const [id, flat] = entry;
        const fields: Record<string, string> = {};
        for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i] as string] = flat[i + 1] as string;
        if (!file.write(`${JSON.stringify({ stream: config.key, id, fields })}\n`)) await once(file, 'drain');
      }
    }
  } while (cursor !== '0-0');
  if (file) {
    file.end();
    await once(file, 'finish');
  }
  const elapsedNs = nowNs() - start;
  const after = memoryKb();
  await redis.quit();
  return { claimed, pages, elapsedNs, rssBeforeKb: before.rssKb, maxRssKb: after.maxRssKb };
});
