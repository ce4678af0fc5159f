-- Token-valued string lock release (check-and-delete): only the holder whose value is stored deletes.
-- KEYS[1] lock, KEYS[2] (optional) shadow key deleted with it; ARGV[1] holder value.
-- Returns 1 when the lock was ours and is now deleted, 0 when it was not ours (an error for the caller).
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('del', KEYS[1])
if KEYS[2] then
  redis.call('del', KEYS[2])
end
return 1
