-- Reads one lifecycle record and the id of the newest notice, in one step: a waiter reads the
-- notices after that id, so a record written after this read is never missed.
--
-- KEYS[1] record key; KEYS[2] notices stream
-- ARGV[1] '1' to delete the record as it is read (`consume`: exactly one reader gets it)
--
-- Returns { record or false, newest notice id ('0-0' when none) }

local record = redis.call('GET', KEYS[1])
if record and ARGV[1] == '1' then redis.call('DEL', KEYS[1]) end
local newest = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
local last = '0-0'
if #newest > 0 then last = newest[1][1] end
return { record, last }
