import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { LuaScripts, REDIS_NOW } from '../../src/redis/lua-scripts.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

interface Commands {
  nrsTestParts(): Promise<[string, number]>;
}

/** The one Lua loader: a script's prelude and fragments in front of it, and a missing file. */
describe('Lua loader (redis/lua-scripts.ts)', () => {
  const redis = useRedisServer();
  const dir = mkdtempSync(join(tmpdir(), 'nrs-lua-'));
  const folder = pathToFileURL(`${dir}/`);
  writeFileSync(join(dir, 'prelude.lua'), "local order = { 'prelude' }\n");
  writeFileSync(join(dir, 'first.lua'), "order[#order + 1] = 'first'\n");
  writeFileSync(join(dir, 'second.lua'), "order[#order + 1] = 'second'\n");
  writeFileSync(join(dir, 'script.lua'), "order[#order + 1] = 'script'\nreturn { table.concat(order, ','), redisNowMs() }\n");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs the prelude, then the fragments in the order named (a shared one too), then the script', async () => {
    const scripts = new LuaScripts<Commands>(folder, { nrsTestParts: { file: 'script.lua', numberOfKeys: 0, fragments: [REDIS_NOW, 'first.lua', 'second.lua'] } }, 'prelude.lua');
    const before = await redis.client.time();
    const [order, nowMs] = await scripts.on(redis.client).nrsTestParts();
    const after = await redis.client.time();
    expect(order).toBe('prelude,first,second,script');
    const ms = ([seconds, micros]: (string | number)[]) => Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    expect(nowMs).toBeGreaterThanOrEqual(ms(before));
    expect(nowMs).toBeLessThanOrEqual(ms(after));
  });

  it('a missing fragment fails when the set is made, naming the script and the file', () => {
    const make = () => new LuaScripts<Commands>(folder, { nrsTestParts: { file: 'script.lua', fragments: ['first.lua', 'gone.lua'] } });
    expect(make).toThrow(`Lua script nrsTestParts: cannot read ${join(dir, 'gone.lua')} (ENOENT)`);
  });

  it('a missing shared fragment (a URL) and a missing script file likewise', () => {
    const gone = pathToFileURL(join(dir, 'shared', 'gone.lua'));
    expect(() => new LuaScripts<Commands>(folder, { nrsTestParts: { file: 'script.lua', fragments: [gone] } })).toThrow(`Lua script nrsTestParts: cannot read ${join(dir, 'shared', 'gone.lua')} (ENOENT)`);
    expect(() => new LuaScripts<Commands>(folder, { nrsTestParts: { file: 'nope.lua' } })).toThrow(`Lua script nrsTestParts: cannot read ${join(dir, 'nope.lua')} (ENOENT)`);
  });
});
