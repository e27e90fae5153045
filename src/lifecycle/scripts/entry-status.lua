-- What Redis knows of one entry of one stream, read in one step (so the answer is one moment's):
-- whether it is held in the delayed schedule, whether it is in the stream, and for each consumer
-- group the group's last-delivered id and the entry's pending record. Classifying that into a
-- state is done by the caller (entry-status.ts), in one place.
--
-- A hold id no longer held whose promotion is still remembered (KEYS[3], promote.lua) is followed
-- to its entry, in the same step: the rest is read for that entry id.
--
-- KEYS[1] stream; KEYS[2] the stream's delayed schedule (sorted set: hold id -> due ms);
-- KEYS[3] its promoted holds (hash: hold id -> entry id)
-- ARGV[1] the id asked about (a stream id, or a hold id)
-- ARGV[2] '1' when ARGV[1] is a stream id (else only the schedule and promoted holds are read)
-- ARGV[3] a group name to read only that group, or '' for every group
--
-- Returns { due ms or -1, in stream 1|0, stream exists 1|0, the entry id a promoted hold became or '',
--           { group, last-delivered id, consumer or '', idle ms or -1, deliveries or -1 }, ... }

if redis.replicate_commands then redis.replicate_commands() end
local stream, schedule, promoted = KEYS[1], KEYS[2], KEYS[3]
local id, isStreamId, onlyGroup = ARGV[1], ARGV[2] == '1', ARGV[3]
local due = redis.call('ZSCORE', schedule, id)
local reply = { due and tonumber(due) or -1, 0, 0, '' }
if not due and not isStreamId then
  -- A pcall: rules from before promoted holds were remembered answer as before (gone).
  local entry = redis.pcall('HGET', promoted, id)
  if type(entry) == 'string' then
    id, isStreamId, reply[4] = entry, true, entry
  end
end
if redis.call('EXISTS', stream) == 0 then return reply end
reply[3] = 1
if not isStreamId then return reply end
if #redis.call('XRANGE', stream, id, id, 'COUNT', 1) > 0 then reply[2] = 1 end
for _, info in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
  local name, last
  for i = 1, #info, 2 do
    if info[i] == 'name' then name = info[i + 1] elseif info[i] == 'last-delivered-id' then last = info[i + 1] end
  end
  if onlyGroup == '' or onlyGroup == name then
    local row = { name, last, '', -1, -1 }
    local pending = redis.call('XPENDING', stream, name, id, id, 1)
    if #pending > 0 then
      row[3], row[4], row[5] = pending[1][2], pending[1][3], pending[1][4]
    end
    reply[#reply + 1] = row
  end
end
return reply
