-- Reads one page of held delayed entries of a stream, soonest due first, without changing
-- anything: for each hold its due time and its unpacked body (see hold.lua).
--
-- KEYS[1] schedule (sorted set: hold id -> due ms); KEYS[2] bodies (hash)
-- ARGV[1] offset (0-based, in due order); ARGV[2] count
--
-- Returns { now ms, held, { hold id, due ms, { word, ... } or false }, ... }

local schedule, bodies = KEYS[1], KEYS[2]
local offset, count = tonumber(ARGV[1]), tonumber(ARGV[2])
if offset == nil or count == nil or offset < 0 or count < 1 then
  return redis.error_reply('ERR delayed list script: offset must be >= 0 and count >= 1')
end
return heldPage(schedule, bodies, offset, count)
