-- Writes one lifecycle record of an entry (its progress or its kept result) with its TTL, and a
-- notice of it in the stream's lifecycle notices, in one step: a waiter that saw the notice finds
-- the record.
--
-- KEYS[1] record key; KEYS[2] notices stream
-- ARGV[1] record (text or bytes); ARGV[2] TTL in ms; ARGV[3] entry id; ARGV[4] kind ('progress' | 'result' |
-- 'settled': a delivery's last progress, which tells its watchers it settled);
-- ARGV[5] approximate MAXLEN of the notices
--
-- Returns the notice's id

redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', 'id', ARGV[3], 'kind', ARGV[4])
