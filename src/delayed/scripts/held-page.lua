-- Fragment of the scripts that read held entries (list.lua, list-page.lua, list-recurring.lua; the
-- loader puts it in front of them, after redis-now.lua): how a held entry is read back, written
-- once. Only local functions: nothing runs until a script calls them.

-- The unpacked body (its words, see hold.lua) of hold `hold`, or false when it is gone or unreadable.
local function heldBody(bodies, hold)
  local body = redis.call('HGET', bodies, hold)
  if not body then return false end
  local ok, unpacked = pcall(cmsgpack.unpack, body)
  if ok and type(unpacked) == 'table' then return unpacked end
  return false
end

-- The page of at most `count` held entries from rank `start` (0-based, soonest due first):
-- { now ms, held, { hold id, due ms, { word, ... } or false }, ... }. Reads only.
local function heldPage(schedule, bodies, start, count)
  local now = redisNowMs()
  local rows = redis.call('ZRANGE', schedule, start, start + count - 1, 'WITHSCORES')
  local out = { now, redis.call('ZCARD', schedule) }
  for i = 1, #rows, 2 do
    out[#out + 1] = { rows[i], tonumber(rows[i + 1]), heldBody(bodies, rows[i]) }
  end
  return out
end
