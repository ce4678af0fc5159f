-- Token-valued string lock acquire (redis-guard-thread, redis-keyspace): SET NX PX and the fencing INCR
-- in one step, so no holder can ever be granted without a token or a token without a hold.
-- KEYS[1] lock, KEYS[2] fencing counter, KEYS[3] (optional) shadow key;
-- ARGV[1] TTL in ms, ARGV[2] holder value, ARGV[3] shadow TTL in ms (only with KEYS[3]).
-- Returns {1, token} when taken, {0, pttl} when the key exists (whoever holds it: not re-entrant).
if not redis.call('set', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[1]) then
  return {0, redis.call('pttl', KEYS[1])}
end
if KEYS[3] then
  redis.call('set', KEYS[3], ARGV[2], 'PX', ARGV[3])
end
return {1, next_fencing_token(KEYS[2])}
