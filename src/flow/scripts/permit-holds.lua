-- The permits of one handler's `extras.globalConcurrency`: at most `max` entries held by the
-- workers of the group at once, each worker's hold a lease that runs out unless renewed, so a
-- crashed worker's permits come back. The one place of their arithmetic, a function permits.lua
-- and limited-read.lua call.
-- holders (hash: worker → permits held), leases (sorted set: worker → ms its lease ends).
-- op ('acquire' | 'release' | 'renew'), worker, n, max, lease (ms); now: Redis' time in ms.
--   acquire: drops expired holds, grants up to n of the free permits. Returns granted, held by all.
--   release: gives back n of this worker's permits. Returns held by this worker, 0.
--   renew:   extends this worker's lease and, unless n is nil, sets its count to n (the worker's own
--            count: one lost or doubled in Redis by a dropped connection is set right). Returns held
--            by this worker before, 0: 0 when its hold had run out (expired and taken back).
-- An unknown op returns nil and the error reply.
local function permitHolds(holders, leases, op, worker, n, max, lease, now)
  local function keep()
    redis.call('PEXPIRE', holders, 2 * lease)
    redis.call('PEXPIRE', leases, 2 * lease)
  end

  if op == 'acquire' then
    local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now)
    for _, gone in ipairs(expired) do redis.call('HDEL', holders, gone) end
    if #expired > 0 then redis.call('ZREMRANGEBYSCORE', leases, '-inf', now) end
    local held = 0
    for _, count in ipairs(redis.call('HVALS', holders)) do held = held + tonumber(count) end
    local granted = math.max(0, math.min(n, max - held))
    if granted > 0 then
      redis.call('HINCRBY', holders, worker, granted)
      redis.call('ZADD', leases, now + lease, worker)
      keep()
    end
    return granted, held + granted
  end

  local mine = tonumber(redis.call('HGET', holders, worker)) or 0
  if op == 'release' then
    mine = math.max(0, mine - n)
    if mine == 0 then
      redis.call('HDEL', holders, worker)
      redis.call('ZREM', leases, worker)
    else
      redis.call('HSET', holders, worker, mine)
    end
    return mine, 0
  elseif op == 'renew' then
    -- An expired hold is no hold, whatever the purge that would drop it has not done yet.
    local expires = tonumber(redis.call('ZSCORE', leases, worker))
    local before = mine
    if expires == nil or expires <= now then before = 0 end
    local count = n or mine
    if count > 0 then
      redis.call('HSET', holders, worker, count)
      redis.call('ZADD', leases, now + lease, worker)
      keep()
    else
      redis.call('HDEL', holders, worker)
      redis.call('ZREM', leases, worker)
    end
    return before, 0
  end
  return nil, redis.error_reply('ERR unknown permits op ' .. tostring(op))
end
