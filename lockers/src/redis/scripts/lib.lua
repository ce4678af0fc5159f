-- Helpers prepended to every lockbench Redis script (one copy, shared by all strategies).

-- The hash field a contender sets on a held watchdog lock so that its release publishes the unlock
-- message (owner fields always contain ':', this one does not).
local WAITERS_FIELD = 'waiters'

-- Fencing: one counter per lock (KEYS in the lock's hash slot), never expiring, so the token of every
-- fresh acquire is strictly greater than every earlier holder's.
local function next_fencing_token(counter_key)
  return redis.call('incr', counter_key)
end

-- The token of the current holder: the counter's value, since nobody else can INCR it while the
-- holder has the lock.
local function current_fencing_token(counter_key)
  return tonumber(redis.call('get', counter_key) or '0')
end

-- Sets the key's TTL to ttl_ms unless it already has more left; returns the PTTL found before. TTLs only
-- grow here, so a short hold re-entering a long one never cuts the long one's server-side TTL below the
-- deadline its holder believes in.
local function extend_ttl(key, ttl_ms)
  local left = redis.call('pttl', key)
  if left < tonumber(ttl_ms) then
    redis.call('pexpire', key, ttl_ms)
  end
  return left
end

-- Watchdog renewal of one hash lock: 0 when owner holds no field in it (gone, expired or taken),
-- otherwise the PTTL found before extending (at least 1; -1 when the key had no TTL).
local function renew_hash_lock(key, owner, ttl_ms)
  if redis.call('hexists', key, owner) == 0 then
    return 0
  end
  local left = extend_ttl(key, ttl_ms)
  if left == 0 then
    return 1
  end
  return left
end
