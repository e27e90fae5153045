-- Acknowledge a batch and record each entry's idempotency key, atomically (one script call).
--
-- KEYS[1] stream; KEYS[2..n+1] the record key of each id (same hash slot as the stream)
-- ARGV[1] group
-- ARGV[2] record TTL in ms
-- ARGV[3] '' for XACK; KEEPREF or ACKED for XACKDEL (work-queue mode, Redis 8.2+)
-- ARGV[4..n+3] the ids, in the order of their record keys
--
-- The records are written first and the acknowledgement last: both happen, or (an error) the
-- script stops before the acknowledgement and the entries stay pending. Returns XACK's count, or
-- XACKDEL's per-id replies.

local stream, group, ttl, policy = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local n = #KEYS - 1
if #ARGV ~= 3 + n then
  return redis.error_reply('ERR ack-and-record script: expected one id per record key')
end
local ids = {}
for i = 1, n do
  redis.call('SET', KEYS[i + 1], ARGV[3 + i], 'PX', ttl)
  ids[i] = ARGV[3 + i]
end
if policy == '' then
  return redis.call('XACK', stream, group, unpack(ids))
end
return redis.call('XACKDEL', stream, group, policy, 'IDS', n, unpack(ids))
