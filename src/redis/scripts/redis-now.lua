-- Fragment of every script that reads Redis' clock (a loader names it as REDIS_NOW, see
-- redis/lua-scripts.ts, and it is put in front of the script): the clock read, written once.
-- Time is Redis' clock, never a worker's or a producer's: processes with skewed clocks agree.
-- Reading it (TIME) before writing needs effects replication on Redis 6.2 (the default from 7.0).
if redis.replicate_commands then redis.replicate_commands() end

-- Redis' time in ms.
local function redisNowMs()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
