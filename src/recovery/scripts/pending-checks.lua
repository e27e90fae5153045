-- Prelude of every recovery script (the loader puts it in front of each one): the pending-entry
-- checks they share. Only local functions: nothing runs until a script calls them.

-- The PEL row { id, owner, idle ms, deliveries } of `id`, or nil when it is not pending (a missing
-- group or stream included). Any other error comes back second, for the script to return as is.
local function pendingRow(stream, group, id)
  local pending = redis.pcall('XPENDING', stream, group, id, id, 1)
  if pending['err'] then
    if string.find(pending['err'], 'NOGROUP', 1, true) then return nil end
    return nil, pending
  end
  return pending[1]
end

-- Type of each key looked at, read once per call (the scripts never change a key's type).
local keyTypes = {}

-- Whether `owner` holds `id` now, (with `minIdle`) has held it at least that many ms, and (with
-- `deliveries`) still has that delivery count. Returns
-- nil when it does; else the script's result row for the id: { id, 'not_pending', '' },
-- { id, 'not_owner', current owner } or { id, 'not_due', '' }. An error reply comes back second.
-- Checked in the same script as the write that follows, so no one can take the entry in between.
local function refuseUnlessOwned(stream, group, id, owner, minIdle, deliveries)
  keyTypes[stream] = keyTypes[stream] or redis.call('TYPE', stream)['ok']
  if keyTypes[stream] ~= 'stream' then return { id, 'not_pending', '' } end
  local row, failure = pendingRow(stream, group, id)
  if failure then return nil, failure end
  if row == nil then return { id, 'not_pending', '' } end
  if row[2] ~= owner then return { id, 'not_owner', row[2] } end
  if minIdle ~= nil and tonumber(row[3]) < minIdle then return { id, 'not_due', '' } end
  if deliveries ~= nil and tonumber(row[4]) ~= deliveries then return { id, 'not_due', '' } end
  return nil
end

