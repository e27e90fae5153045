-- Redrive dead letters back to their source stream as NEW entries (one atomic unit per call).
--
-- KEYS[1] dead-letter stream, KEYS[2] source stream (same hash slot on Cluster)
-- ARGV[1] n, the number of dead-letter ids; then n ids
--
-- Per id: read the dead letter, check it is ours (header names, source stream), XADD the original
-- fields plus history fields to the source stream (the preserving write) and XDEL the dead letter
-- last (the destructive write). A re-run finds the dead letter gone (no-op), so a resent call never
-- redrives twice.
--
-- Returns one row per id: { id, status, new source id or '' }
-- status: redriven | not_found | tombstone (nothing to redrive) | other_stream | not_dead_letter

local dead, source = KEYS[1], KEYS[2]
local n = tonumber(ARGV[1])
if n == nil or #ARGV ~= 1 + n then
  return redis.error_reply('ERR redrive script: expected ' .. tostring(n) .. ' ids')
end
local deadType = redis.call('TYPE', dead)['ok']
if deadType ~= 'stream' and deadType ~= 'none' then
  return redis.error_reply('WRONGTYPE dead-letter key "' .. dead .. '" holds a ' .. deadType .. ', not a stream')
end
local sourceType = redis.call('TYPE', source)['ok']
if sourceType ~= 'stream' and sourceType ~= 'none' then
  return redis.error_reply('WRONGTYPE stream key "' .. source .. '" holds a ' .. sourceType .. ', not a stream')
end

-- Must match dead-letter.lua and dead-letter-format.ts.
local HEADER = { 'dlq:stream', 'dlq:id', 'dlq:group', 'dlq:consumer', 'dlq:deliveries', 'dlq:reason', 'dlq:error', 'dlq:at', 'dlq:fields' }
-- History fields a redrive appends; older copies in the original fields are replaced, not repeated.
local HISTORY = { ['dlq:redriven-from'] = true, ['dlq:previous-id'] = true, ['dlq:previous-deliveries'] = true, ['dlq:previous-reason'] = true, ['dlq:redrives'] = true }

local results = {}
if deadType == 'none' then
  for i = 1, n do results[i] = { ARGV[1 + i], 'not_found', '' } end
  return results
end

for i = 1, n do
  local id = ARGV[1 + i]
  local entry = redis.call('XRANGE', dead, id, id)[1]
  if entry == nil then
    results[i] = { id, 'not_found', '' }
  else
    local flat = entry[2]
    local header = {}
    local valid = #flat >= 2 * #HEADER
    for h = 1, #HEADER do
      if valid and flat[2 * h - 1] ~= HEADER[h] then valid = false end
      if valid then header[HEADER[h]] = flat[2 * h] end
    end
    if not valid then
      results[i] = { id, 'not_dead_letter', '' }
    elseif header['dlq:stream'] ~= source then
      results[i] = { id, 'other_stream', '' }
    elseif #flat == 2 * #HEADER then
      results[i] = { id, 'tombstone', '' }
    else
      local redrives = 0
      local args = { source, '*' }
      for f = 2 * #HEADER + 1, #flat, 2 do
        local name = flat[f]
        if HISTORY[name] then
          if name == 'dlq:redrives' then redrives = tonumber(flat[f + 1]) or 0 end
        else
          args[#args + 1] = name
          args[#args + 1] = flat[f + 1]
        end
      end
      args[#args + 1] = 'dlq:redriven-from'
      args[#args + 1] = id
      args[#args + 1] = 'dlq:previous-id'
      args[#args + 1] = header['dlq:id']
      args[#args + 1] = 'dlq:previous-deliveries'
      args[#args + 1] = header['dlq:deliveries']
      args[#args + 1] = 'dlq:previous-reason'
      args[#args + 1] = header['dlq:reason']
      args[#args + 1] = 'dlq:redrives'
      args[#args + 1] = redrives + 1
      local newId = redis.call('XADD', unpack(args))
      redis.call('XDEL', dead, id)
      results[i] = { id, 'redriven', newId }
    end
  end
end
return results
