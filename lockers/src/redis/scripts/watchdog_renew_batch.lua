-- redis-watchdog batched renewal: N locks in one call.
-- KEYS[1..N] lock hashes; ARGV[1] TTL in ms, ARGV[1 + i] owner field of KEYS[i].
-- Returns N answers, each as watchdog_renew.lua's.
local answers = {}
for i, key in ipairs(KEYS) do
  answers[i] = renew_hash_lock(key, ARGV[i + 1], ARGV[1])
end
return answers
