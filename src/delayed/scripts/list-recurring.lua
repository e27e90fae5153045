-- Reads the recurring entries of a stream (the hold ids in its recurring set, see hold.lua):
-- for each its due time and unpacked body. Ids whose hold is gone (removed, or dropped by a
-- promotion as missing or invalid) leave the set here, so it stays as small as the schedules.
--
-- KEYS[1] schedule (sorted set: hold id -> due ms); KEYS[2] bodies (hash); KEYS[3] recurring (set)
--
-- Returns { now ms, { hold id, due ms, { word, ... } or false }, ... }

local out = { redisNowMs() }
for _, hold in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local due = redis.call('ZSCORE', KEYS[1], hold)
  if not due then
    redis.call('SREM', KEYS[3], hold)
  else
    out[#out + 1] = { hold, tonumber(due), heldBody(KEYS[2], hold) }
  end
end
return out
