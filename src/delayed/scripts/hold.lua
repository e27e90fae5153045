-- Holds one delayed entry until it is due: its hold id in the schedule (a sorted set scored by
-- the due time, in ms of Redis' clock) and its body in the bodies hash, written in one step, so
-- a hold is either complete or absent. A relative delay is added to Redis' clock here, not the
-- producer's, so producers and workers with skewed clocks agree on when it is due.
--
-- KEYS[1] schedule (sorted set: hold id -> due ms); KEYS[2] bodies (hash: hold id -> body)
-- ARGV[1] hold id
-- ARGV[2] 'in' (ARGV[3] is a delay in ms) or 'at' (ARGV[3] is the due time, Unix ms)
-- ARGV[3] ms
-- ARGV[4..] the promotion's XADD, packed as they are into the body (see promote.lua):
--   noMkStream ('1'|'0'), trim kind ('none'|'maxLen'|'maxAge'), operator ('~'|'='),
--   amount (MAXLEN count, or the age in ms of MINID), onlyAcked ('1'|'0'),
--   every (ms between occurrences of a recurring entry, '0' for a one-off), then field, value, ...
--
-- A recurring entry registered again under the same hold id keeps its schedule (the next
-- occurrence stays where it is) and takes the new body: registering it at every start-up of an
-- app adds no occurrence.
--
-- Returns { hold id, due ms }

if redis.replicate_commands then redis.replicate_commands() end
-- Past about 8000 words Lua's unpack() fails: such an entry could never be promoted, so it is refused here.
if #ARGV < 11 or (#ARGV - 9) % 2 ~= 0 or #ARGV > 7900 then
  return redis.error_reply('ERR delayed hold script: expected a hold id, a due time, 6 XADD words and 1 to 3945 field/value pairs')
end
local hold, mode, ms = ARGV[1], ARGV[2], tonumber(ARGV[3])
if ms == nil or (mode ~= 'in' and mode ~= 'at') then
  return redis.error_reply('ERR delayed hold script: the due time must be "in" or "at" a number of ms')
end
local due = ms
if mode == 'in' then
  local time = redis.call('TIME')
  due = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) + ms
end
local words = {}
for i = 4, #ARGV do words[i - 3] = ARGV[i] end
redis.call('HSET', KEYS[2], hold, cmsgpack.pack(words))
if ARGV[9] ~= '0' then
  local scheduled = redis.call('ZSCORE', KEYS[1], hold)
  if scheduled then return { hold, tonumber(scheduled) } end
end
redis.call('ZADD', KEYS[1], due, hold)
return { hold, due }
