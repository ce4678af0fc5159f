-- Redisson's RLock acquire (RedissonLock.tryLockInnerAsync, the same in 3.43.0 and 4.x): the lock is
-- taken when the hash is absent or re-entered when the owner's field exists; either way the field is
-- incremented and the TTL set (never extended only: a re-entry with a shorter lease cuts the TTL).
-- KEYS[1] lock hash; ARGV[1] TTL in ms, ARGV[2] owner field.
-- Returns {1, 0} when taken or re-entered (Redisson has no fencing token), {0, pttl} when another owner
-- holds it (Redisson answers nil or the PTTL; the pair only keeps lockbench's shared answer shape).
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {1, 0}
end
return {0, redis.call('pttl', KEYS[1])}
