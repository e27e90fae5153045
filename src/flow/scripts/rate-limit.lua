-- The token bucket of one handler's `extras.rateLimit` (token-bucket.lua, put in front of this
-- file with redis-now.lua by the loader).
-- KEYS[1] the bucket. ARGV: op ('take' | 'refund' | 'backoff'), max, per (ms), n.
-- Reply {granted, wait ms} (token-bucket.lua says what each op answers).
local granted, wait = tokenBucket(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), redisNowMs())
if granted == nil then return wait end
return {granted, wait}
