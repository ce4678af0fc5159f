-- Redisson's classic renewal of one lock (RedissonBaseLock.renewExpirationAsync, 3.x before 3.44):
-- while the owner's field exists, the TTL is set to the watchdog timeout.
-- KEYS[1] lock hash; ARGV[1] TTL in ms, ARGV[2] owner field.
-- Returns 1 (renewed) or 0 (the owner no longer holds it). The TTL found before is not read.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0
