-- Holds one delayed entry until it is due: its hold id in the schedule (a sorted set scored by
-- the due time, in ms of Redis' clock) and its body in the bodies hash, written in one step, so
-- a hold is either complete or absent. A relative delay is added to Redis' clock here, not the
-- producer's, so producers and workers with skewed clocks agree on when it is due.
--
-- KEYS[1] schedule (sorted set: hold id -> due ms); KEYS[2] bodies (hash: hold id -> body);
-- KEYS[3] recurring (set of the hold ids of recurring entries, for listing them)
-- ARGV[1] the stream's wake-up channel (src/delayed/wake-channel.ts)
-- ARGV[2] hold id
-- ARGV[3] 'in' (ARGV[4] is a delay in ms) or 'at' (ARGV[4] is the due time, Unix ms)
-- ARGV[4] ms
-- ARGV[5..9] the promotion's XADD, packed as they are into the body (see promote.lua):
--   noMkStream ('1'|'0'), trim kind ('none'|'maxLen'|'maxAge'), operator ('~'|'='),
--   amount (MAXLEN count, or the age in ms of MINID), onlyAcked ('1'|'0')
-- ARGV[10] recurrence: '0' (a one-off), the ms between occurrences, or 'cron'; for 'cron',
--   ARGV[11] the expression, ARGV[12] its time zone, ARGV[13] the next occurrences (Unix ms,
--   ascending, comma-separated; those not after Redis' clock are dropped) and the due time is
--   the first occurrence
-- then field, value, ...
--
-- The body's sixth word is the recurrence: '0', the period, or for cron the table
-- { expression, time zone, occurrence ms, ... } that promote.lua pops and workers top up.
--
-- A recurring entry registered again under the same hold id keeps its schedule (the next
-- occurrence stays where it is; for cron, when the expression and zone are unchanged, its list
-- of occurrences too) and takes the new body: registering it at every start-up of an app adds no
-- occurrence. A cron entry registered with another expression or zone is scheduled by the new one.
--
-- A hold due before every other one of the schedule (or the first one) is announced on the wake-up
-- channel as '<due ms> <now ms>': the workers promoting the stream re-arm their next round for it
-- (their last round saw an earlier entry at best). A later hold changes no worker's next round,
-- so it publishes nothing. The PUBLISH (and the ZRANGE before it) may be refused by the ACL
-- (rules from before the wake-up): the hold is written all the same and found by the workers'
-- interval round.
--
-- Returns { hold id, due ms }

local channel, recurrence = ARGV[1], ARGV[10]
local firstField = recurrence == 'cron' and 14 or 11
-- Past about 8000 words Lua's unpack() fails: such an entry could never be promoted, so it is refused here.
if recurrence == nil or #ARGV < firstField + 1 or (#ARGV - firstField + 1) % 2 ~= 0 or #ARGV > 7901 then
  return redis.error_reply('ERR delayed hold script: expected a wake-up channel, a hold id, a due time, 6 XADD words (cron: 3 more) and 1 to 3945 field/value pairs')
end
local hold, mode, ms = ARGV[2], ARGV[3], tonumber(ARGV[4])
if ms == nil or (mode ~= 'in' and mode ~= 'at') then
  return redis.error_reply('ERR delayed hold script: the due time must be "in" or "at" a number of ms')
end
local now = redisNowMs()
local due = ms
if mode == 'in' then due = now + ms end
local words = {}
for i = 5, 9 do words[#words + 1] = ARGV[i] end
words[6] = recurrence
if recurrence == 'cron' then
  local spec = { ARGV[11], ARGV[12] }
  for text in string.gmatch(ARGV[13], '[^,]+') do
    local at = tonumber(text)
    if at and at > now then spec[#spec + 1] = at end
  end
  words[6] = spec
  -- Parked a second when no occurrence is left: the first promotion asks a worker for more.
  due = spec[3] or now + 1000
end
for i = firstField, #ARGV do words[#words + 1] = ARGV[i] end
if recurrence ~= '0' then
  redis.call('SADD', KEYS[3], hold)
  local scheduled = redis.call('ZSCORE', KEYS[1], hold)
  if scheduled then
    if recurrence ~= 'cron' then
      redis.call('HSET', KEYS[2], hold, cmsgpack.pack(words))
      return { hold, tonumber(scheduled) }
    end
    local old = redis.call('HGET', KEYS[2], hold)
    local ok, oldWords = false, nil
    if old then ok, oldWords = pcall(cmsgpack.unpack, old) end
    local oldSpec = ok and type(oldWords) == 'table' and oldWords[6]
    if type(oldSpec) == 'table' and oldSpec[1] == words[6][1] and oldSpec[2] == words[6][2] then
      words[6] = oldSpec
      redis.call('HSET', KEYS[2], hold, cmsgpack.pack(words))
      return { hold, tonumber(scheduled) }
    end
  end
end
redis.call('HSET', KEYS[2], hold, cmsgpack.pack(words))
local first = redis.pcall('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
redis.call('ZADD', KEYS[1], due, hold)
if type(first) == 'table' and not first.err and (#first < 2 or due < tonumber(first[2])) then
  redis.pcall('PUBLISH', channel, string.format('%d %d', due, now))
end
return { hold, due }
