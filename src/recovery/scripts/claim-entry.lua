-- Fragment of the claim scripts (claim-idle.lua, claim-retry.lua; the loader puts it in front of
-- them): the claim itself, written once. Only a local function: nothing runs until a script calls it.

-- Claims pending `id` for `claimer` with a plain XCLAIM … 0 (no JUSTID: the caller has checked the
-- owner and idle time in the same step, and a refusal of XCLAIM's own check would look like a
-- deletion). `retryCount` nil: a delivery, the count rises by one; else RETRYCOUNT keeps that count.
-- Returns the script's row for the id: { id, 'claimed', the entry's flat field array } or
-- { id, 'deleted', '' } (pending, its entry trimmed or deleted).
local function claimEntry(stream, group, claimer, id, retryCount)
  local claimed
  if retryCount == nil then
    claimed = redis.call('XCLAIM', stream, group, claimer, 0, id)
  else
    claimed = redis.call('XCLAIM', stream, group, claimer, 0, id, 'RETRYCOUNT', retryCount)
  end
  -- Redis 7.0+ leaves a deleted entry out (and drops its PEL ref); 6.2 answers nil for it.
  local entry = claimed[1]
  if entry and entry[2] then return { id, 'claimed', entry[2] } end
  return { id, 'deleted', '' }
end
