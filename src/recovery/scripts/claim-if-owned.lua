-- Re-claim pending entries only if `owner` still holds them (atomicity A4 lease renewal and
-- A10 shutdown handoff). A bare `XCLAIM ... 0` would steal an entry back from a sibling that
-- legitimately claimed it after our lease lapsed; the owner check in the same script prevents it.
-- JUSTID: the delivery count stays as it is.
--
-- KEYS[1] stream
-- ARGV[1] group
-- ARGV[2] owner that must currently hold each entry
-- ARGV[3] consumer that receives the entries (the owner itself to renew, a handoff consumer to hand off)
-- ARGV[4] idle time in ms the claimed entries get (0: renew; a huge value: claimable at once)
-- ARGV[5] n, the number of ids; then n ids
--
-- Returns one row per id: { id, status, current owner or '' }
-- status: claimed | not_owner | not_pending | deleted (the PEL ref pointed at a trimmed entry and
-- Redis >= 7.0 dropped it while claiming)

local stream = KEYS[1]
local group, owner, target, idle, n = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
if n == nil or #ARGV ~= 5 + n then
  return redis.error_reply('ERR claim-if-owned script: expected ' .. tostring(n) .. ' ids')
end
local results = {}
for i = 1, n do
  local id = ARGV[5 + i]
  local refused, failure = refuseUnlessOwned(stream, group, id, owner)
  if failure then return failure end
  if refused then
    results[i] = refused
  else
    local claimed = redis.call('XCLAIM', stream, group, target, 0, id, 'IDLE', idle, 'JUSTID')
    if #claimed == 1 then
      results[i] = { id, 'claimed', target }
    else
      results[i] = { id, 'deleted', '' }
    end
  end
end
return results
