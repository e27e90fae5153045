-- The dead letters of one source entry: a bounded scan of the dead-letter stream from the entry's
-- own time on (a dead letter is written after its entry, on Redis' clock, so its id is not
-- lower), matching the header's source stream and source id (dead-letter-format.ts: the header
-- is read by position). Every group's dead letter of the entry is returned.
--
-- KEYS[1] dead-letter stream
-- ARGV[1] source stream; ARGV[2] source id; ARGV[3] most dead letters read (the scan's bound)
--
-- Returns { scanned everything after the entry's time 1|0,
--           { dead-letter id, group, consumer, deliveries, reason, error, at ms }, ... }

local dead, source, id = KEYS[1], ARGV[1], ARGV[2]
local budget = tonumber(ARGV[3])
local start = string.match(id, '^(%d+)%-') .. '-0'
local found = {}
local page = 200
while budget > 0 do
  local count = math.min(page, budget)
  local rows = redis.call('XRANGE', dead, start, '+', 'COUNT', count)
  budget = budget - #rows
  for _, row in ipairs(rows) do
    local f = row[2]
    if f[1] == 'dlq:stream' and f[2] == source and f[4] == id then
      found[#found + 1] = { row[1], f[6], f[8], f[10], f[12], f[14], f[16] }
    end
  end
  if #rows < count then return { 1, unpack(found) } end
  start = '(' .. rows[#rows][1]
end
return { 0, unpack(found) }
