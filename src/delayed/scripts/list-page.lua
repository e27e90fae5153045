-- Reads one page of held delayed entries of a stream, soonest due first, after a cursor (the
-- due time and hold id of the last entry of the previous page), without changing anything. By
-- cursor, not offset: entries promoted or removed meanwhile before it neither repeat an entry on
-- the next page nor skip one.
--
-- KEYS[1] schedule (sorted set: hold id -> due ms); KEYS[2] bodies (hash)
-- ARGV[1] the cursor's due ms ('' for the first page); ARGV[2] its hold id; ARGV[3] count
--
-- Returns { now ms, held, { hold id, due ms, { word, ... } or false }, ... }

local schedule, bodies = KEYS[1], KEYS[2]
local afterDue, afterHold, count = ARGV[1], ARGV[2], tonumber(ARGV[3])
if count == nil or count < 1 or (afterDue ~= '' and tonumber(afterDue) == nil) then
  return redis.error_reply('ERR delayed page script: expected a due time or "", a hold id and a count >= 1')
end

-- Byte order, as Redis orders members of equal score (Lua's < follows the server's locale).
local function bytesBefore(a, b)
  local length = math.min(#a, #b)
  for i = 1, length do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

local start = 0
if afterDue ~= '' then
  local score = redis.call('ZSCORE', schedule, afterHold)
  if score and tonumber(score) == tonumber(afterDue) then
    start = redis.call('ZRANK', schedule, afterHold) + 1
  else
    -- The cursor's hold is gone (promoted, removed) or due at another time: start after those
    -- due before its due time and those due with it whose id sorts up to its id.
    start = redis.call('ZCOUNT', schedule, '-inf', '(' .. afterDue)
    local offset = 0
    while true do
      local ties = redis.call('ZRANGEBYSCORE', schedule, afterDue, afterDue, 'LIMIT', offset, 1000)
      local passed = 0
      for _, hold in ipairs(ties) do
        if hold == afterHold or bytesBefore(hold, afterHold) then passed = passed + 1 else break end
      end
      start = start + passed
      if passed < 1000 then break end
      offset = offset + 1000
    end
  end
end

return heldPage(schedule, bodies, start, count)
