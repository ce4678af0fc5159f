-- redis-watchdog renewal of one lock (Redisson's renewExpiration check-and-extend).
-- KEYS[1] lock hash; ARGV[1] TTL in ms, ARGV[2] owner field.
-- Returns 0 when the owner no longer holds it, else the PTTL found before extending (the safety margin).
return renew_hash_lock(KEYS[1], ARGV[2], ARGV[1])
