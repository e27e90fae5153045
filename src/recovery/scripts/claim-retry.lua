-- Claims entries of the retry consumer whose backoff is over, for a worker to run them again.
-- Owner and idle time are checked in the same step as the XCLAIM, so of two recoverers seeing the
-- same due entry only the first takes it (XCLAIM's own min-idle-time could not do that for a
-- wait of 0 ms, and it would take an entry someone else claimed meanwhile once idle enough).
-- A plain XCLAIM (no JUSTID): the retry is a delivery, the count rises by one.
-- The delivery count seen by the claimer's scan is checked too: an entry that went around again
-- since (claimed, failed and released by another worker) has a new count and a new backoff, so a
-- claim from the older scan is refused (`not_due`); the next scan sees it as it is now.
--
-- KEYS[1] stream
-- ARGV[1] group
-- ARGV[2] retry consumer that must hold each entry
-- ARGV[3] claimer (this worker's consumer)
-- ARGV[4] n, the number of ids; then n triples: id, the idle time in ms it must have reached,
--         the delivery count the claimer's scan saw
--
-- Returns one row per id: { id, status, fields or '' }
-- status: claimed (fields: the entry's flat field array) | not_owner | not_due | not_pending |
-- deleted (its entry was trimmed or deleted)

local stream = KEYS[1]
local group, retry, claimer, n = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
if n == nil or #ARGV ~= 4 + 3 * n then
  return redis.error_reply('ERR claim-retry script: expected ' .. tostring(n) .. ' ids')
end
local results = {}
for i = 1, n do
  local id, due, seen = ARGV[2 + 3 * i], tonumber(ARGV[3 + 3 * i]), tonumber(ARGV[4 + 3 * i])
  local refused, failure = refuseUnlessOwned(stream, group, id, retry, due, seen)
  if failure then return failure end
  if refused then
    results[i] = refused
  else
    results[i] = claimEntry(stream, group, claimer, id)
  end
end
return results
