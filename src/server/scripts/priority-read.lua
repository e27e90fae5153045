-- One read of a pattern's priority lanes (`extras.priorities`): new entries (`>`), at most `budget`
-- in all. Each due lane first gets one entry (the starvation bound, priority-read.ts), then the rest
-- of the budget goes highest lane first, each lane taking what it has before the next is read.
--
-- KEYS[1..n] the lanes' streams, highest first (one hash slot on a Cluster)
-- ARGV[1] group
-- ARGV[2] consumer
-- ARGV[3] budget: entries this read may take in all
-- ARGV[4..n+3] per lane, '1' when it is due, else '0'
--
-- Returns XREADGROUP's reply shape, `{ {stream, entries}, ... }`, lanes in priority order, only
-- those that gave entries (an empty array when none did). A lane whose stream or group is gone
-- fails the whole read before any lane is read, as a native XREADGROUP over several streams does:
-- entries read from the lanes before it would be pending for this consumer but in no reply. That
-- NOGROUP is returned as the error, unchanged (6.2 would wrap a raised one).

local group, consumer, budget = ARGV[1], ARGV[2], tonumber(ARGV[3])
local lanes = #KEYS
local taken = {}

-- Reads up to `count` new entries of `lane` into taken[lane]; returns how many, or nil and the error.
local function read(lane, count)
  local reply = redis.pcall('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count, 'STREAMS', KEYS[lane], '>')
  if type(reply) == 'table' and reply.err then return nil, reply end
  if not reply then return 0 end
  local entries = reply[1][2]
  local into = taken[lane]
  if into == nil then
    taken[lane] = entries
  else
    for i = 1, #entries do into[#into + 1] = entries[i] end
  end
  budget = budget - #entries
  return #entries
end

-- XPENDING with COUNT 0 only looks the group up (NOGROUP when it or the stream is gone).
for lane = 1, lanes do
  local looked = redis.pcall('XPENDING', KEYS[lane], group, '-', '+', 0)
  if type(looked) == 'table' and looked.err then return looked end
end

for lane = 1, lanes do
  if budget > 0 and ARGV[3 + lane] == '1' then
    local _, failure = read(lane, 1)
    if failure then return failure end
  end
end
for lane = 1, lanes do
  if budget <= 0 then break end
  local _, failure = read(lane, budget)
  if failure then return failure end
end

local reply = {}
for lane = 1, lanes do
  if taken[lane] ~= nil and #taken[lane] > 0 then reply[#reply + 1] = { KEYS[lane], taken[lane] } end
end
return reply
