-- Redisson's RLock release (RedissonLock.unlockInnerAsync, 3.43.0 and 4.x), with its unlock latch: a
-- retried release finds the first one's answer in the latch key instead of releasing twice.
-- KEYS[1] lock hash, KEYS[2] unlock channel, KEYS[3] unlock latch;
-- ARGV[1] unlock message, ARGV[2] TTL in ms re-set on a partial release, ARGV[3] owner field,
-- ARGV[4] latch TTL in ms.
-- Returns -1 when the owner does not hold it (Redisson: nil, IllegalMonitorStateException), 0 when
-- re-entrant holds remain (the TTL is re-set), 1 when the lock was freed: the key is deleted and the
-- unlock message always published, whether or not anybody waits.
local val = redis.call('get', KEYS[3])
if val ~= false then
  return tonumber(val)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return -1
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[4])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[4])
return 1
