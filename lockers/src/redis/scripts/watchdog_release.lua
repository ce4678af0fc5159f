-- redis-watchdog release (Redisson's unlockInner, plus a check of the hold's fencing token).
-- KEYS[1] lock hash, KEYS[2] fencing counter; ARGV[1] TTL in ms of the hold being released, ARGV[2]
-- owner field, ARGV[3] unlock channel, ARGV[4] unlock message, ARGV[5] the hold's fencing token.
-- The token tells holds of one owner apart: a fresh acquire INCRs the counter, so once the owner's lease
-- was lost and the owner took the lock again, the stale lease's token is no longer the counter's value.
-- Returns -1 when the owner does not hold it, or holds a newer hold than this one (an error for the
-- caller, never a silent success),
-- 0 when re-entrant holds remain (the TTL is re-set, never shortened), 1 when the lock was freed: the
-- key is deleted and, if a contender marked the hash while it was held, the unlock message published.
local held = redis.call('hmget', KEYS[1], ARGV[2], WAITERS_FIELD)
local count = tonumber(held[1])
if not count or current_fencing_token(KEYS[2]) ~= tonumber(ARGV[5]) then
  return -1
end
if count > 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], -1)
  extend_ttl(KEYS[1], ARGV[1])
  return 0
end
redis.call('del', KEYS[1])
if held[2] then
  redis.call('publish', ARGV[3], ARGV[4])
end
return 1
