-- The token bucket of one handler's `extras.rateLimit`, shared by every worker of its group: the
-- one place of its arithmetic, a function rate-limit.lua and limited-read.lua call.
-- bucket: the key (hash: tokens, at = ms of the last refill, until = ms a back-off ends).
-- op ('take' | 'refund' | 'backoff'), max, per (ms), n; now: Redis' time in ms.
--   take:    grants up to n tokens, but only once min(n, chunk) are there (chunk: what accrues in
--            a twentieth of `per`), so a worker short of tokens sleeps instead of polling per token.
--            Returns granted, wait ms: wait > 0 when nothing was granted.
--   refund:  gives back n tokens taken but not used (a read returned fewer entries), except during
--            a back-off. Returns 0, 0.
--   backoff: no token for n ms from now, for every worker (a handler saw the API's 429); the bucket
--            is empty then and refills only after. Returns 0, n.
-- An unknown op returns nil and the error reply.
local function tokenBucket(bucket, op, max, per, n, now)
  local state = redis.call('HMGET', bucket, 'tokens', 'at', 'until')
  local tokens = tonumber(state[1]) or max
  local at = tonumber(state[2]) or now
  local blocked = tonumber(state[3]) or 0
  -- A failover onto a server whose clock is behind: no refill until it catches up. Nor during a
  -- back-off: it ends with the bucket empty, so entries start again at the limit's pace, not `max` at once.
  local refillFrom = math.max(at, math.min(blocked, now))
  if now > refillFrom then
    tokens = math.min(max, tokens + (now - refillFrom) * max / per)
  end
  if now > at then at = now end

  local granted = 0
  local wait = 0
  if op == 'take' then
    if now < blocked then
      wait = blocked - now
    else
      local chunk = math.max(1, math.min(n, math.floor(max / 20)))
      if tokens >= chunk then
        granted = math.min(n, math.floor(tokens))
        tokens = tokens - granted
      else
        wait = math.ceil((chunk - tokens) * per / max)
      end
    end
  elseif op == 'refund' then
    -- Tokens taken before a back-off and given back during it would all be there when it ends.
    if now >= blocked then tokens = math.min(max, tokens + n) end
  elseif op == 'backoff' then
    blocked = math.max(blocked, now + n)
    tokens = 0
    wait = n
  else
    return nil, redis.error_reply('ERR unknown rate-limit op ' .. tostring(op))
  end

  redis.call('HSET', bucket, 'tokens', tostring(tokens), 'at', at, 'until', blocked)
  -- Idle for two periods (past any back-off), the bucket is full again: the key may go.
  redis.call('PEXPIRE', bucket, math.max(blocked - now, 0) + 2 * per)
  return granted, wait
end
