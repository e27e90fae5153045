-- Tops up the list of occurrences of a cron entry (see hold.lua and promote.lua), computed by a
-- worker, since Lua in Redis cannot read cron expressions. Only for the expression and zone the
-- worker computed from (an entry registered again meanwhile with another one is left alone),
-- only occurrences after the time the promotion that asked for them ran (Redis' clock then: an
-- occurrence that came due while the worker computed or stalled is kept, and the next round adds
-- one entry for it, as for any missed occurrence) and after the last one listed (two workers
-- topping up at once add each occurrence once), and only while the entry is still scheduled (a
-- removed one stays removed). The entry is scheduled at its first occurrence (a parked one is
-- due again).
--
-- KEYS[1] schedule (sorted set: hold id -> due ms); KEYS[2] bodies (hash)
-- ARGV[1] hold id; ARGV[2] expression; ARGV[3] time zone; ARGV[4] most occurrences to keep;
-- ARGV[5] only occurrences after this (Unix ms: the asking promotion's time, or the last one it
-- saw listed); ARGV[6..] occurrences (Unix ms, ascending)
--
-- Returns { occurrences listed after the call, the entry's due ms }, or { -1, -1 } when it was
-- left alone. A parked entry topped up becomes due earlier than the promotion that asked for the
-- occurrences reported: its worker paces its next round by this due time.

if redis.replicate_commands then redis.replicate_commands() end
local hold, expression, timezone, keep = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local scheduled = redis.call('ZSCORE', KEYS[1], hold)
if not scheduled then return { -1, -1 } end
local body = redis.call('HGET', KEYS[2], hold)
if not body then return { -1, -1 } end
local ok, words = pcall(cmsgpack.unpack, body)
if not ok or type(words) ~= 'table' then return { -1, -1 } end
local spec = words[6]
if type(spec) ~= 'table' or spec[1] ~= expression or spec[2] ~= timezone then return { -1, -1 } end
local after = tonumber(ARGV[5])
if after == nil then return redis.error_reply('ERR delayed refill script: ARGV[5] must be a time in ms') end
for i = 6, #ARGV do
  local at = tonumber(ARGV[i])
  if #spec - 2 >= keep then break end
  if at and at > after and (#spec == 2 or at > spec[#spec]) then spec[#spec + 1] = at end
end
words[6] = spec
redis.call('HSET', KEYS[2], hold, cmsgpack.pack(words))
if spec[3] then redis.call('ZADD', KEYS[1], 'XX', spec[3], hold) end
return { #spec - 2, spec[3] or tonumber(scheduled) }
