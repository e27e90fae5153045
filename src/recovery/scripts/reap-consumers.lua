-- Delete consumers that hold no pending entries (atomicity A9). XGROUP DELCONSUMER always deletes
-- and drops the consumer's pending refs for good, so the "0 pending" check and the delete must be
-- one atomic step: a reader that takes an entry runs entirely before or after this script.
--
-- KEYS[1] stream; optionally KEYS[1 + i] the lease (heartbeat) key of consumer i, for every i
-- ARGV[1] group
-- ARGV[2] minimum idle time in ms from XINFO CONSUMERS `idle` (0: no check, XINFO not called)
-- ARGV[3] n, the number of consumers; then n consumer names
--
-- Returns one row per consumer: { name, status }
-- status: deleted | has_pending | active (idle below the minimum) | lease_alive | missing

local stream = KEYS[1]
local group, minIdle, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if n == nil or #ARGV ~= 3 + n then
  return redis.error_reply('ERR reap-consumers script: expected ' .. tostring(n) .. ' consumers')
end
local withLeases = #KEYS > 1
if withLeases and #KEYS ~= 1 + n then
  return redis.error_reply('ERR reap-consumers script: pass one lease key per consumer or none')
end

local results = {}
if redis.call('TYPE', stream)['ok'] ~= 'stream' then
  for i = 1, n do results[i] = { ARGV[3 + i], 'missing' } end
  return results
end

-- One XINFO CONSUMERS per call (O(consumers in the group)), only when an idle minimum is asked for.
local idleByName = nil
if minIdle > 0 then
  local rows = redis.pcall('XINFO', 'CONSUMERS', stream, group)
  if rows['err'] then
    if not string.find(rows['err'], 'NOGROUP', 1, true) then return rows end
    rows = {}
  end
  idleByName = {}
  for _, row in ipairs(rows) do
    local name, idle = nil, nil
    for j = 1, #row, 2 do
      if row[j] == 'name' then name = row[j + 1] elseif row[j] == 'idle' then idle = row[j + 1] end
    end
    if name ~= nil then idleByName[name] = idle end
  end
end

for i = 1, n do
  local consumer = ARGV[3 + i]
  local pending = redis.pcall('XPENDING', stream, group, '-', '+', 1, consumer)
  if pending['err'] then
    if not string.find(pending['err'], 'NOGROUP', 1, true) then return pending end
    results[i] = { consumer, 'missing' }
  elseif #pending > 0 then
    results[i] = { consumer, 'has_pending' }
  elseif withLeases and redis.call('EXISTS', KEYS[1 + i]) == 1 then
    results[i] = { consumer, 'lease_alive' }
  elseif idleByName ~= nil and idleByName[consumer] == nil then
    results[i] = { consumer, 'missing' }
  elseif idleByName ~= nil and idleByName[consumer] < minIdle then
    results[i] = { consumer, 'active' }
  else
    redis.call('XGROUP', 'DELCONSUMER', stream, group, consumer)
    results[i] = { consumer, 'deleted' }
  end
end
return results
