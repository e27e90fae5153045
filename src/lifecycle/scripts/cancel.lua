-- Cancels one entry in one step, never losing it: it is written to the dead-letter stream with
-- reason 'cancelled' (the operator's reason as its error, the entry's fields kept), then taken out
-- of where it would start: a held entry's hold is removed; an entry in the stream is acknowledged
-- in every group that has it pending and deleted from the stream (so no group still waiting for
-- it reads it). When some group had it pending (a worker may be running it), a marker with the
-- reason is left (with a TTL): that worker's lease renewal finds the entry gone and reads why.
--
-- KEYS[1] stream; KEYS[2] dead-letter stream; KEYS[3] delayed schedule; KEYS[4] delayed bodies;
-- KEYS[5] delayed recurring set; KEYS[6] cancel marker
-- ARGV[1] id (a stream id or a hold id); ARGV[2] reason; ARGV[3] '1' when ARGV[1] is a stream id;
-- ARGV[4] marker TTL (ms)
--
-- Returns { previous: 'held' | 'waiting' | 'pending' | 'done' | 'gone', dead letter id or '' }
-- ('pending': some group had it pending, running or not; 'done' and 'gone': nothing was changed)

local stream, dead, schedule, bodies, recurring, marker = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local id, reason, isStreamId = ARGV[1], ARGV[2], ARGV[3] == '1'
local now = redisNowMs()

-- The header of dead-letter-format.ts, in its order, then the entry's fields.
local function deadLetter(group, consumer, deliveries, fields)
  local args = { 'dlq:stream', stream, 'dlq:id', id, 'dlq:group', group, 'dlq:consumer', consumer,
    'dlq:deliveries', tostring(deliveries), 'dlq:reason', 'cancelled', 'dlq:error', reason,
    'dlq:at', tostring(now), 'dlq:fields', tostring(math.floor(#fields / 2)) }
  for _, word in ipairs(fields) do args[#args + 1] = word end
  return redis.call('XADD', dead, '*', unpack(args))
end

if redis.call('ZSCORE', schedule, id) then
  local body = redis.call('HGET', bodies, id)
  local fields = {}
  if body then
    -- The body's first six words are the promotion's XADD options and recurrence (hold.lua).
    local ok, words = pcall(cmsgpack.unpack, body)
    if ok and type(words) == 'table' then
      for i = 7, #words do fields[#fields + 1] = words[i] end
    end
  end
  local letter = deadLetter('', '', 0, fields)
  redis.call('ZREM', schedule, id)
  redis.call('HDEL', bodies, id)
  redis.call('SREM', recurring, id)
  return { 'held', letter }
end
if not isStreamId or redis.call('EXISTS', stream) == 0 then return { 'gone', '' } end

local function after(a, b)
  local ams, aseq = string.match(a, '^(%d+)%-(%d+)$')
  local bms, bseq = string.match(b, '^(%d+)%-(%d+)$')
  ams, aseq, bms, bseq = tonumber(ams), tonumber(aseq), tonumber(bms), tonumber(bseq)
  return ams > bms or (ams == bms and aseq > bseq)
end

local rows = redis.call('XRANGE', stream, id, id, 'COUNT', 1)
local pending, waiting = {}, {}
local groups = redis.call('XINFO', 'GROUPS', stream)
for _, info in ipairs(groups) do
  local name, last
  for i = 1, #info, 2 do
    if info[i] == 'name' then name = info[i + 1] elseif info[i] == 'last-delivered-id' then last = info[i + 1] end
  end
  local held = redis.call('XPENDING', stream, name, id, id, 1)
  if #held > 0 then
    pending[#pending + 1] = { name, held[1][2], held[1][4] }
  elseif #rows > 0 and after(id, last) then
    waiting[#waiting + 1] = name
  end
end
if #pending == 0 then
  if #rows == 0 then return { 'gone', '' } end
  -- Every group read and acknowledged it: nothing to cancel (in a stream without groups it waits).
  if #waiting == 0 and #groups > 0 then return { 'done', '' } end
end
local fields = {}
if #rows > 0 then fields = rows[1][2] end
local first = pending[1]
local letter
if first then
  letter = deadLetter(first[1], first[2], first[3], fields)
else
  letter = deadLetter(waiting[1] or '', '', 0, fields)
end
for _, row in ipairs(pending) do redis.call('XACK', stream, row[1], id) end
if #rows > 0 then redis.call('XDEL', stream, id) end
if #pending > 0 then
  redis.call('SET', marker, reason, 'PX', ARGV[4])
  return { 'pending', letter }
end
return { 'waiting', letter }
