// Worker child: the raw contenders of delayed-promote. A promotion loop, the most direct one on the
// transport's own keys and bodies (one inline Lua script per batch, called back to back while it
// moves a full batch), next to the raw XREADGROUP/XACK loop with a no-op handler on the stream.
// With `options.script: 'promote.lua'` the loop calls the transport's own script instead
// (`promoteDue`): what the script costs, without the server around it.
import { Redis } from 'ioredis';
import { sleep } from '../clock.js';
import { delayedKeys } from '../../src/delayed/delayed-keys.js';
import { promoteDue } from '../../src/delayed/promote.js';
import { ensureGroup, RawConsumerLoop } from '../raw-loop.js';
import { serveWorker } from './harness.js';

/** Entries per script call: the server's default `delayed.batch`. */
const BATCH = 100;

/**
 * Due holds (oldest first) → XADD of each body's fields with its MAXLEN, then one ZREM and one HDEL
 * of all of them. Reads the bodies hold.lua packs (docs/scheduling.md); leaves out what promote.lua
 * adds for other cases (recurring entries, NOMKSTREAM, MINID, missing or unreadable bodies, the
 * entry ids and next due time in the reply). Returns how many it moved.
 */
const PROMOTE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
if #due == 0 then return 0 end
for _, hold in ipairs(due) do
  local w = cmsgpack.unpack(redis.call('HGET', KEYS[3], hold))
  redis.call('XADD', KEYS[1], 'MAXLEN', w[3], w[4], '*', unpack(w, 7))
end
redis.call('ZREM', KEYS[2], unpack(due))
redis.call('HDEL', KEYS[3], unpack(due))
return #due
`;

type PromoteCommand = { rawPromote(stream: string, schedule: string, bodies: string, limit: number): Promise<number> };

await serveWorker(async (probe, config) => {
  const promoter = new Redis(config.redisUrl);
  const reader = new Redis(config.redisUrl);
  promoter.defineCommand('rawPromote', { numberOfKeys: 3, lua: PROMOTE });
  await Promise.all([promoter.ping(), reader.ping()]);
  const { schedule, bodies } = delayedKeys(config.key);
  const ours = config.options?.script === 'promote.lua';
  const promoteOnce = ours
    ? async () => (await promoteDue(promoter, config.key, BATCH, { listIds: false })).added
    : () => (promoter as unknown as PromoteCommand).rawPromote(config.key, schedule, bodies, BATCH);
  const consumer = new RawConsumerLoop(reader, config.key, config.group, 'bench-worker', (payload) => probe.onMessage(payload));
  let running = false;
  let loop: Promise<void> | undefined;
  const promote = async (): Promise<void> => {
    while (running) {
      const moved = await promoteOnce();
      if (moved < BATCH) await sleep(1);
    }
  };
  return {
    start: async () => {
      await ensureGroup(reader, config.key, config.group);
      running = true;
      loop = promote();
      consumer.start();
    },
    stop: async () => {
      running = false;
      await loop;
      await consumer.stop();
      await Promise.all([promoter.quit(), reader.quit()]);
    },
  };
});
