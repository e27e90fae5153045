-- Dead-letter a batch of pending entries (atomicity A1). One call is one atomic unit.
--
-- KEYS[1] source stream, KEYS[2] dead-letter stream (same hash slot on Cluster)
-- ARGV[1] group
-- ARGV[2] expected owner consumer, or '' for any owner
-- ARGV[3] minimum delivery count (0: no check)
-- ARGV[4] minimum idle time in ms (0: no check)
-- ARGV[5] reason (max_deliveries, decode_error, ...)
-- ARGV[6] dead-letter MAXLEN ~ (0: no trimming)
-- ARGV[7] '' to acknowledge with XACK; KEEPREF or ACKED to acknowledge and delete with XACKDEL
--         (work-queue mode, Redis 8.2+)
-- ARGV[8] n, the number of ids; then n pairs: id, error text
--
-- Per id: re-read the PEL row (the caller's view may be stale), validate, XADD to the dead-letter
-- stream (the write that preserves the message) and XACK last (the destructive write). A failure
-- half-way leaves the entry pending, never lost; a re-run finds the id no longer pending (no-op).
--
-- An entry whose dead letter would need more XADD arguments than a script call can pass (Lua's
-- C stack: about 8000, so more than ~3 900 field pairs) is not attempted: status too_large, it
-- stays pending with its owner and count, and the batch goes on. A write that fails half-way
-- (OOM...) ends the batch with a `failed` row carrying the error: the rows before it are moved.
--
-- Returns one row per id handled: { id, status, dead-letter id or error text or '', owner or '', deliveries }
-- status: moved | tombstone | not_pending | not_owner | below_min_deliveries | not_idle | too_large | failed

local source, dead = KEYS[1], KEYS[2]
local group, expectedOwner = ARGV[1], ARGV[2]
local minDeliveries, minIdle = tonumber(ARGV[3]), tonumber(ARGV[4])
local reason, maxLen, deletePolicy, n = ARGV[5], tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
if n == nil or #ARGV ~= 8 + 2 * n then
  return redis.error_reply('ERR dead-letter script: expected ' .. tostring(n) .. ' id/error pairs')
end

-- Validate both keys before any write: a dead-letter key of the wrong type must fail the whole
-- call while every entry is still pending.
local deadType = redis.call('TYPE', dead)['ok']
if deadType ~= 'stream' and deadType ~= 'none' then
  return redis.error_reply('WRONGTYPE dead-letter key "' .. dead .. '" holds a ' .. deadType .. ', not a stream; nothing was moved')
end
local sourceType = redis.call('TYPE', source)['ok']
if sourceType ~= 'stream' and sourceType ~= 'none' then
  return redis.error_reply('WRONGTYPE stream key "' .. source .. '" holds a ' .. sourceType .. ', not a stream')
end

-- Work-queue mode needs XACKDEL: find out before any write (0-0 is never an entry id: nothing changes).
if deletePolicy ~= '' then
  local probe = redis.pcall('XACKDEL', source, group, deletePolicy, 'IDS', 1, '0-0')
  if type(probe) == 'table' and probe['err'] then
    return redis.error_reply('ERR dead-letter script: deleteEntry needs XACKDEL (Redis 8.2+): ' .. probe['err'] .. '; nothing was moved')
  end
end

-- Most arguments one redis.call may get from unpack() (Lua 5.1 LUAI_MAXCSTACK is 8000), with margin.
local MAX_XADD_ARGS = 7900

local now = string.format('%d', redisNowMs())

local results = {}
for i = 1, n do
  local id, errorText = ARGV[7 + 2 * i], ARGV[8 + 2 * i]
  local row, failure = nil, nil
  if sourceType == 'stream' then row, failure = pendingRow(source, group, id) end
  if failure then return failure end

  if row == nil then
    results[i] = { id, 'not_pending', '', '', 0 }
  else
    local owner, idle, deliveries = row[2], row[3], row[4]
    if expectedOwner ~= '' and owner ~= expectedOwner then
      results[i] = { id, 'not_owner', '', owner, deliveries }
    elseif deliveries < minDeliveries then
      results[i] = { id, 'below_min_deliveries', '', owner, deliveries }
    elseif idle < minIdle then
      results[i] = { id, 'not_idle', '', owner, deliveries }
    else
      local entry = redis.call('XRANGE', source, id, id)[1]
      local fields = entry and entry[2] or {}
      local status, entryReason = 'moved', reason
      if entry == nil then
        -- Trimmed or XDEL'ed while pending: record a tombstone so the loss is never silent.
        status, entryReason = 'tombstone', 'trimmed'
      end
      local args = { dead }
      if maxLen > 0 then
        args[#args + 1] = 'MAXLEN'
        args[#args + 1] = '~'
        args[#args + 1] = maxLen
      end
      -- The header: fixed names in a fixed order (see dead-letter-format.ts), then the original
      -- fields verbatim, so a redrive restores them exactly even if their names start with "dlq:".
      local header = {
        '*',
        'dlq:stream', source,
        'dlq:id', id,
        'dlq:group', group,
        'dlq:consumer', owner,
        'dlq:deliveries', deliveries,
        'dlq:reason', entryReason,
        'dlq:error', errorText,
        'dlq:at', now,
        'dlq:fields', #fields / 2,
      }
      if #args + #header + #fields > MAX_XADD_ARGS then
        results[i] = { id, 'too_large', '', owner, deliveries }
      else
        for _, value in ipairs(header) do args[#args + 1] = value end
        for _, value in ipairs(fields) do args[#args + 1] = value end
        local deadId = redis.pcall('XADD', unpack(args))
        if type(deadId) == 'table' and deadId['err'] then
          -- Nothing of this id was written; the ids before it are moved: say so and stop.
          results[i] = { id, 'failed', deadId['err'], owner, deliveries }
          return results
        end
        if deletePolicy ~= '' and status == 'moved' then
          redis.call('XACKDEL', source, group, deletePolicy, 'IDS', 1, id)
        else
          -- A tombstone's entry is gone already: nothing to delete.
          redis.call('XACK', source, group, id)
        end
        results[i] = { id, status, deadId, owner, deliveries }
      end
    end
  end
end
return results
