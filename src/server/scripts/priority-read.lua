-- One read of a pattern's priority lanes (`extras.priorities`): new entries (`>`), highest lane first,
-- at most `budget` in all, each lane below the highest offered at least one (the starvation bound).
--
-- KEYS[1..n] the lanes' streams, highest first (one hash slot on a Cluster)
-- ARGV[1] group
-- ARGV[2] consumer
-- ARGV[3] budget: entries this read may take in all (n or more)
--
-- Lane i is offered the budget left minus one entry for each lane below it; what a lane does not
-- take passes to the lanes below. Budget still left at the end goes, highest first, to the lanes
-- that took all they were offered. Returns XREADGROUP's reply shape, `{ {stream, entries}, ... }`,
-- lanes in priority order, only those that gave entries (an empty array when none did). A failed
-- read (NOGROUP) is returned as that error, unchanged (6.2 would wrap a raised one).

local group, consumer, budget = ARGV[1], ARGV[2], tonumber(ARGV[3])
local lanes = #KEYS
local taken = {}
local full = {}

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
  return #entries
end

for lane = 1, lanes do
  if budget <= 0 then break end
  -- (a budget below n, which the caller never sends, would serve the highest lanes first)
  local offer = math.max(1, budget - (lanes - lane))
  local got, failure = read(lane, offer)
  if failure then return failure end
  budget = budget - got
  full[lane] = got == offer
end
for lane = 1, lanes do
  if budget <= 0 then break end
  if full[lane] then
    local got, failure = read(lane, budget)
    if failure then return failure end
    budget = budget - got
  end
end

local reply = {}
for lane = 1, lanes do
  if taken[lane] ~= nil and #taken[lane] > 0 then reply[#reply + 1] = { KEYS[lane], taken[lane] } end
end
return reply
