-- Claims idle pending entries for recovery, and says of each one not claimed why. A bare XCLAIM
-- answers nothing both for an entry someone else took or acked meanwhile (with XACKDEL, also
-- deleted it) and for one deleted from the stream while it was pending (Redis 7.0+ drops such a
-- PEL ref while claiming): only the second is lost. Reading the PEL row in the same step as the
-- XCLAIM tells them apart, so `deleted` means pending in this group and gone from the stream.
-- The idle time is checked here, then XCLAIM … 0: a refusal of XCLAIM's own check would look like
-- a deletion.
--
-- KEYS[1] stream
-- ARGV[1] group
-- ARGV[2] claimer (this worker's consumer)
-- ARGV[3] idle time in ms each entry must have reached
-- ARGV[4] n, the number of ids; then n pairs: id, the delivery count to set (RETRYCOUNT: a
--         handed-off entry keeps its count) or '' (a delivery: the count rises by one)
--
-- Returns one row per id: { id, status, fields or '' }
-- status: claimed (fields: the entry's flat field array) | not_pending (acked meanwhile) | not_due
-- (claimed or renewed meanwhile) | deleted (pending, its entry trimmed or deleted)

local stream = KEYS[1]
local group, claimer, minIdle, n = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
if n == nil or minIdle == nil or #ARGV ~= 4 + 2 * n then
  return redis.error_reply('ERR claim-idle script: expected ' .. tostring(n) .. ' ids')
end
local results = {}
for i = 1, n do
  local id, count = ARGV[3 + 2 * i], ARGV[4 + 2 * i]
  local row, failure = pendingRow(stream, group, id)
  if failure then return failure end
  if row == nil then
    results[i] = { id, 'not_pending', '' }
  elseif tonumber(row[3]) < minIdle then
    results[i] = { id, 'not_due', '' }
  else
    results[i] = claimEntry(stream, group, claimer, id, count ~= '' and count or nil)
  end
end
return results
