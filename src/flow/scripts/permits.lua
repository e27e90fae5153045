-- The permits of one handler's `extras.globalConcurrency`: at most `max` entries held by the
-- workers of the group at once, each worker's hold a lease that runs out unless renewed, so a
-- crashed worker's permits come back.
-- KEYS[1] holders (hash: worker → permits held), KEYS[2] leases (sorted set: worker → ms its lease ends).
-- ARGV: op ('acquire' | 'release' | 'renew'), worker, n, max, lease (ms).
--   acquire: drops expired holds, grants up to n of the free permits. Reply {granted, held by all}.
--   release: gives back n of this worker's permits. Reply {held by this worker, 0}.
--   renew:   extends this worker's lease and, unless n is '', sets its count to n (the worker's own
--            count: one lost or doubled in Redis by a dropped connection is set right). Reply {held
--            by this worker before, 0}: 0 when its hold had run out (expired and taken back).
-- Time is Redis' clock, never a worker's.
if redis.replicate_commands then redis.replicate_commands() end
local op = ARGV[1]
local worker = ARGV[2]
local n = tonumber(ARGV[3]) -- nil for renew's '' (extend only)
local max = tonumber(ARGV[4])
local lease = tonumber(ARGV[5])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local function keep()
  redis.call('PEXPIRE', KEYS[1], 2 * lease)
  redis.call('PEXPIRE', KEYS[2], 2 * lease)
end

if op == 'acquire' then
  local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
  for _, gone in ipairs(expired) do redis.call('HDEL', KEYS[1], gone) end
  if #expired > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) end
  local held = 0
  for _, count in ipairs(redis.call('HVALS', KEYS[1])) do held = held + tonumber(count) end
  local granted = math.max(0, math.min(n, max - held))
  if granted > 0 then
    redis.call('HINCRBY', KEYS[1], worker, granted)
    redis.call('ZADD', KEYS[2], now + lease, worker)
    keep()
  end
  return {granted, held + granted}
end

local mine = tonumber(redis.call('HGET', KEYS[1], worker)) or 0
if op == 'release' then
  mine = math.max(0, mine - n)
  if mine == 0 then
    redis.call('HDEL', KEYS[1], worker)
    redis.call('ZREM', KEYS[2], worker)
  else
    redis.call('HSET', KEYS[1], worker, mine)
  end
  return {mine, 0}
elseif op == 'renew' then
  -- An expired hold is no hold, whatever the purge that would drop it has not done yet.
  local expires = tonumber(redis.call('ZSCORE', KEYS[2], worker))
  local before = mine
  if expires == nil or expires <= now then before = 0 end
  local count = n or mine
  if count > 0 then
    redis.call('HSET', KEYS[1], worker, count)
    redis.call('ZADD', KEYS[2], now + lease, worker)
    keep()
  else
    redis.call('HDEL', KEYS[1], worker)
    redis.call('ZREM', KEYS[2], worker)
  end
  return {before, 0}
end
return redis.error_reply('ERR unknown permits op ' .. tostring(op))
