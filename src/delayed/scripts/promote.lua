-- Moves up to ARGV[1] due delayed entries of one stream into the stream, oldest due first: for
-- each an XADD (with the trimming and NOMKSTREAM of its emit), then one ZREM and one HDEL for all
-- the holds moved, in this one script. Redis runs a script whole or not at all (a promoter killed
-- mid-call changes nothing; AOF and replicas get its effects as one MULTI), and scripts never
-- interleave, so of many workers promoting at once exactly one finds a given hold still
-- scheduled: each entry is added once. An XADD that fails (WRONGTYPE, OOM) ends the call with its
-- error, its hold and the later ones left as they were (retried by the next call); the holds of
-- the entries added before it are still removed, since Redis keeps a script's earlier writes.
-- The bodies are read with one HMGET (HGET each when the ACL refuses HMGET: rules from before it).
--
-- KEYS[1] stream; KEYS[2] schedule (sorted set: hold id -> due ms); KEYS[3] bodies (hash);
-- KEYS[4] promoted (hash: hold id -> entry id); KEYS[5] promoted-at (sorted set: hold id -> ms)
-- ARGV[1] limit: most entries moved by this call
-- ARGV[2] a cron entry with fewer occurrences left than this asks its worker for more
-- ARGV[3] '1': list each added entry's hold and id in the reply; '0': count them only (a worker
--         needs no ids, and a page's reply shrinks to its skipped holds)
-- ARGV[4] how long (ms) a one-off hold's entry id is kept in KEYS[4] for status by hold id, 0:
--         not kept. The ids older than that are dropped here (as many as this call promotes, and
--         more), so the map holds about one such period of promotions. Its writes are pcalls:
--         notes for callers, they never stop a promotion (an ACL refusal leaves them out)
--
-- A recurring entry (every > 0) keeps its body and is scheduled again, in the same step, at its
-- first occurrence after now: occurrences missed while no worker promoted are not caught up,
-- the stream gets one entry for them. A cron entry (its sixth word the table { expression, time
-- zone, occurrence ms, ... }, see hold.lua) likewise: its occurrences up to now are popped (one
-- entry for them) and it is scheduled at the next one; with none left it adds nothing and is
-- parked a second, until a worker tops up its list (refill.lua).
--
-- Returns { now ms, next due ms or -1, entries added, hold id, outcome, hold id, outcome, ... }
-- outcome: the new entry id (with ARGV[3] '1'), or a status: 'dropped' (NOMKSTREAM and no stream: nothing written),
-- 'missing' (no body: removed), 'invalid' (a body this script cannot read: unscheduled, its body
-- left for inspection), or for a cron entry running low the table { 'refill', expression, time
-- zone, its last occurrence ms or 0 } (after its own outcome when it also added an entry)

local stream, schedule, bodies, promotedIds, promotedAt = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local limit = tonumber(ARGV[1])
if limit == nil or limit < 1 then
  return redis.error_reply('ERR delayed promote script: limit must be a positive number')
end
local refillBelow = tonumber(ARGV[2]) or 0
local listIds = ARGV[3] ~= '0'
local keepIdsMs = tonumber(ARGV[4]) or 0
local now = redisNowMs()
local due = redis.call('ZRANGEBYSCORE', schedule, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
local out = { now, -1, 0 }
-- An XADD's outcome: counted (its hold and id listed with ARGV[3] '1'), or 'dropped' when
-- NOMKSTREAM found no stream.
local function reportAdded(hold, id)
  if id then
    out[3] = out[3] + 1
    if listIds then
      out[#out + 1] = hold
      out[#out + 1] = id
    end
  else
    out[#out + 1] = hold
    out[#out + 1] = 'dropped'
  end
end
local holds, dueAt = {}, {}
for i = 1, #due, 2 do
  holds[#holds + 1] = due[i]
  dueAt[#holds] = tonumber(due[i + 1])
end
local unscheduled, removedBodies = {}, {}
-- One-off holds promoted by this call: hold, entry id, hold, entry id, ...
local oneOffs = {}
local failure
if #holds > 0 then
  local found = redis.pcall('HMGET', bodies, unpack(holds))
  if type(found) ~= 'table' or found.err then
    found = {}
    for i, hold in ipairs(holds) do found[i] = redis.call('HGET', bodies, hold) end
  end
  for i, hold in ipairs(holds) do
    local body = found[i]
    if not body then
      unscheduled[#unscheduled + 1] = hold
      out[#out + 1] = hold
      out[#out + 1] = 'missing'
    else
      local ok, words = pcall(cmsgpack.unpack, body)
      if not ok or type(words) ~= 'table' or #words < 8 then
        unscheduled[#unscheduled + 1] = hold
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
        for j = 7, #words do args[#args + 1] = words[j] end
        local spec = words[6]
        -- A cron entry adds one only when an occurrence is listed (a parked entry has none).
        local adds = type(spec) ~= 'table' or #spec > 2
        local id = false
        if adds then
          id = redis.pcall('XADD', unpack(args))
          if type(id) == 'table' and id.err then
            failure = id
            break
          end
        end
        if type(spec) == 'table' then
          local rest = { spec[1], spec[2] }
          for j = 3, #spec do
            if spec[j] > now then rest[#rest + 1] = spec[j] end
          end
          words[6] = rest
          redis.call('HSET', bodies, hold, cmsgpack.pack(words))
          redis.call('ZADD', schedule, rest[3] or now + 1000, hold)
          if adds then reportAdded(hold, id) end
          if #rest - 2 < refillBelow then
            out[#out + 1] = hold
            out[#out + 1] = { 'refill', rest[1], rest[2], #spec > 2 and spec[#spec] or 0 }
          end
        else
          local every = tonumber(spec) or 0
          if every > 0 then
            redis.call('ZADD', schedule, dueAt[i] + every * (math.floor((now - dueAt[i]) / every) + 1), hold)
          else
            unscheduled[#unscheduled + 1] = hold
            removedBodies[#removedBodies + 1] = hold
            if id then
              oneOffs[#oneOffs + 1] = hold
              oneOffs[#oneOffs + 1] = id
            end
          end
          reportAdded(hold, id)
        end
      end
    end
  end
end
if #unscheduled > 0 then redis.call('ZREM', schedule, unpack(unscheduled)) end
if #removedBodies > 0 then redis.call('HDEL', bodies, unpack(removedBodies)) end
if keepIdsMs > 0 then
  local expired = redis.pcall('ZRANGEBYSCORE', promotedAt, '-inf', now - keepIdsMs, 'LIMIT', 0, limit + 100)
  if type(expired) == 'table' and not expired.err and #expired > 0 then
    redis.pcall('HDEL', promotedIds, unpack(expired))
    redis.pcall('ZREM', promotedAt, unpack(expired))
  end
  if #oneOffs > 0 then
    local at = {}
    for i = 1, #oneOffs, 2 do
      at[#at + 1] = now
      at[#at + 1] = oneOffs[i]
    end
    redis.pcall('HSET', promotedIds, unpack(oneOffs))
    redis.pcall('ZADD', promotedAt, unpack(at))
  end
end
if failure then return failure end
local nextDue = redis.call('ZRANGE', schedule, 0, 0, 'WITHSCORES')
if #nextDue == 2 then out[2] = tonumber(nextDue[2]) end
return out
