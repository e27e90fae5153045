-- The permits of one handler's `extras.globalConcurrency` (permit-holds.lua, put in front of this
-- file with redis-now.lua by the loader).
-- KEYS[1] holders, KEYS[2] leases. ARGV: op ('acquire' | 'release' | 'renew'), worker, n ('' for
-- renew: extend only), max, lease (ms).
-- Reply {first, second} (permit-holds.lua says what each op answers).
local first, second = permitHolds(KEYS[1], KEYS[2], ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), redisNowMs())
if first == nil then return second end
return {first, second}
