-- Redisson's batched renewal (org.redisson.renewal.LockTask, 3.44 and later): one call per chunk.
-- KEYS[1..N] lock hashes; ARGV[1] TTL in ms, ARGV[1 + i] owner field of KEYS[i].
-- Returns N answers, each 1 (renewed) or 0 (no longer held), as redisson_renew.lua's.
local result = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    result[i] = 1
  else
    result[i] = 0
  end
end
return result
