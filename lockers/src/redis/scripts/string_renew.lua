-- Token-valued string lock renewal (check-and-pexpire): only the holder whose value is stored extends.
-- KEYS[1] lock, KEYS[2] (optional) shadow key re-armed with the renewal;
-- ARGV[1] TTL in ms, ARGV[2] holder value, ARGV[3] shadow TTL in ms (only with KEYS[2]).
-- Returns 0 when the value is not ours (gone, expired or taken), else the PTTL found before extending
-- (at least 1; -1 when the key had no TTL).
if redis.call('get', KEYS[1]) ~= ARGV[2] then
  return 0
end
local left = extend_ttl(KEYS[1], ARGV[1])
if KEYS[2] then
  redis.call('set', KEYS[2], ARGV[2], 'PX', ARGV[3])
end
if left == 0 then
  return 1
end
return left
