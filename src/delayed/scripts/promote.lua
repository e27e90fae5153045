-- Moves up to ARGV[1] due delayed entries of one stream into the stream, oldest due first: for
-- each, XADD (with the trimming and NOMKSTREAM of its emit) and then ZREM + HDEL of its hold, in
-- this one script. Redis runs a script whole or not at all (a promoter killed mid-call changes
-- nothing; AOF and replicas get its effects as one MULTI), and scripts never interleave, so of
-- many workers promoting at once exactly one finds a given hold still scheduled: each entry is
-- added once. An XADD that fails (WRONGTYPE, OOM) aborts the call before its hold is removed,
-- so the entry stays held and the next call tries again.
--
-- KEYS[1] stream; KEYS[2] schedule (sorted set: hold id -> due ms); KEYS[3] bodies (hash)
-- ARGV[1] limit: most entries moved by this call
-- ARGV[2] a cron entry with fewer occurrences left than this asks its worker for more
--
-- A recurring entry (every > 0) keeps its body and is scheduled again, in the same step, at its
-- first occurrence after now: occurrences missed while no worker promoted are not caught up,
-- the stream gets one entry for them. A cron entry (its sixth word the table { expression, time
-- zone, occurrence ms, ... }, see hold.lua) likewise: its occurrences up to now are popped (one
-- entry for them) and it is scheduled at the next one; with none left it adds nothing and is
-- parked a second, until a worker tops up its list (refill.lua).
--
-- Returns { now ms, next due ms or -1, hold id, outcome, hold id, outcome, ... }
-- outcome: the new entry id, or a status: 'dropped' (NOMKSTREAM and no stream: nothing written),
-- 'missing' (no body: removed), 'invalid' (a body this script cannot read: unscheduled, its body
-- left for inspection), or for a cron entry running low the table { 'refill', expression, time
-- zone, its last occurrence ms or 0 } (after its own outcome when it also added an entry)

if redis.replicate_commands then redis.replicate_commands() end
local stream, schedule, bodies = KEYS[1], KEYS[2], KEYS[3]
local limit = tonumber(ARGV[1])
if limit == nil or limit < 1 then
  return redis.error_reply('ERR delayed promote script: limit must be a positive number')
end
local refillBelow = tonumber(ARGV[2]) or 0
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', schedule, '-inf', now, 'LIMIT', 0, limit)
local out = { now, -1 }
for _, hold in ipairs(due) do
  local body = redis.call('HGET', bodies, hold)
  if not body then
    redis.call('ZREM', schedule, hold)
    out[#out + 1] = hold
    out[#out + 1] = 'missing'
  else
    local ok, words = pcall(cmsgpack.unpack, body)
    if not ok or type(words) ~= 'table' or #words < 8 then
      redis.call('ZREM', schedule, hold)
      out[#out + 1] = hold
      out[#out + 1] = 'invalid'
    else
      local noMkStream, kind, operator, amount, onlyAcked = words[1], words[2], words[3], words[4], words[5]
      local args = { stream }
      if noMkStream == '1' then args[#args + 1] = 'NOMKSTREAM' end
      if kind == 'maxLen' then
        args[#args + 1] = 'MAXLEN'
        args[#args + 1] = operator
        args[#args + 1] = amount
      elseif kind == 'maxAge' then
        args[#args + 1] = 'MINID'
        args[#args + 1] = operator
        args[#args + 1] = string.format('%d', math.max(0, now - tonumber(amount)))
      end
      if kind ~= 'none' and onlyAcked == '1' then args[#args + 1] = 'ACKED' end
      args[#args + 1] = '*'
      for i = 7, #words do args[#args + 1] = words[i] end
      local spec = words[6]
      if type(spec) == 'table' then
        -- cron: add the entry only when an occurrence is listed (a parked entry has none)
        local id = false
        if #spec > 2 then id = redis.call('XADD', unpack(args)) or 'dropped' end
        local rest = { spec[1], spec[2] }
        for j = 3, #spec do
          if spec[j] > now then rest[#rest + 1] = spec[j] end
        end
        words[6] = rest
        redis.call('HSET', bodies, hold, cmsgpack.pack(words))
        redis.call('ZADD', schedule, rest[3] or now + 1000, hold)
        if id then
          out[#out + 1] = hold
          out[#out + 1] = id
        end
        if #rest - 2 < refillBelow then
          out[#out + 1] = hold
          out[#out + 1] = { 'refill', rest[1], rest[2], #spec > 2 and spec[#spec] or 0 }
        end
      else
        local id = redis.call('XADD', unpack(args))
        local every = tonumber(spec) or 0
        if every > 0 then
          local dueAt = tonumber(redis.call('ZSCORE', schedule, hold))
          redis.call('ZADD', schedule, dueAt + every * (math.floor((now - dueAt) / every) + 1), hold)
        else
          redis.call('ZREM', schedule, hold)
          redis.call('HDEL', bodies, hold)
        end
        out[#out + 1] = hold
        out[#out + 1] = id or 'dropped'
      end
    end
  end
end
local nextDue = redis.call('ZRANGE', schedule, 0, 0, 'WITHSCORES')
if #nextDue == 2 then out[2] = tonumber(nextDue[2]) end
return out
