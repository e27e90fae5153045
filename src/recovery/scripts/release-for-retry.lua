-- Releases entries whose handler failed to the group's retry consumer, owner-checked, and writes
-- each one's retry record (wait, delivery count, failing consumer, error) in the same step.
-- XCLAIM ... 0 id JUSTID: the idle time restarts at 0 (it now measures the time since the
-- failure) and the delivery count stays as it is (the release is no delivery). An entry another
-- consumer holds now (our lease lapsed and it was claimed) is left alone, and gets no record.
--
-- KEYS[1] stream; KEYS[1 + i] the retry record key of the i-th id (same hash slot)
-- ARGV[1] group
-- ARGV[2] owner that must currently hold each entry (the failing worker)
-- ARGV[3] retry consumer that receives them
-- ARGV[4] n, the number of ids; then n quadruples: id, record, record TTL in ms, and the delivery
--         count to set ('' keeps it): a hold that was no real delivery (a per-key rate limit found
--         no token) sets it one lower, so the claim that brings the entry back restores it
--
-- Returns one row per id: { id, status, current owner or '' }
-- status: released | not_owner | not_pending | deleted

local stream = KEYS[1]
local group, owner, target, n = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
if n == nil or #ARGV ~= 4 + 4 * n or #KEYS ~= 1 + n then
  return redis.error_reply('ERR release-for-retry script: expected ' .. tostring(n) .. ' ids, records and keys')
end
local results = {}
for i = 1, n do
  local id, record, ttl, count = ARGV[1 + 4 * i], ARGV[2 + 4 * i], ARGV[3 + 4 * i], ARGV[4 + 4 * i]
  local refused, failure = refuseUnlessOwned(stream, group, id, owner)
  if failure then return failure end
  if refused then
    results[i] = refused
  else
    local claimed
    if count == '' then
      claimed = redis.call('XCLAIM', stream, group, target, 0, id, 'JUSTID')
    else
      claimed = redis.call('XCLAIM', stream, group, target, 0, id, 'RETRYCOUNT', count, 'JUSTID')
    end
    if #claimed == 1 then
      redis.call('SET', KEYS[1 + i], record, 'PX', ttl)
      results[i] = { id, 'released', target }
    else
      results[i] = { id, 'deleted', '' }
    end
  end
end
return results
