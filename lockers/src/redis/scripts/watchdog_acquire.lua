-- redis-watchdog acquire (Redisson's RLock tryLockInner, plus a fencing token).
-- KEYS[1] lock hash, KEYS[2] fencing counter; ARGV[1] TTL in ms, ARGV[2] owner field, ARGV[3] '1' when
-- other waiters of this client wait on the lock.
-- Returns {1, token} when taken or re-entered, {0, pttl} when another owner holds it. A contender also
-- marks the hash (WAITERS_FIELD) so the holder's release publishes the unlock message; an uncontended
-- release skips the PUBLISH. A fresh hold taken while other waiters of the same client still wait is
-- marked too: an unlock message wakes one waiter per client, so the others never retried against this
-- hold and would otherwise sleep until the previous holder's TTL.
local left = redis.call('pttl', KEYS[1])
if left == -2 then
  local token = next_fencing_token(KEYS[2])
  redis.call('hset', KEYS[1], ARGV[2], 1)
  if ARGV[3] == '1' then
    redis.call('hset', KEYS[1], WAITERS_FIELD, 1)
  end
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {1, token}
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  if left < tonumber(ARGV[1]) then
    redis.call('pexpire', KEYS[1], ARGV[1])
  end
  return {1, current_fencing_token(KEYS[2])}
end
redis.call('hset', KEYS[1], WAITERS_FIELD, 1)
return {0, left}
