-- define.lua: creates or changes a limit. ARGV[4] = key, [5] = kind (r|c),
-- [6] = capacity, [7] = lifetime ms (window or timeout), [8] = overage
-- (debt|deny), [9] = the definition as JSON (what listings return). An
-- increase applies at once and cancels a pending decrease; a decrease
-- applies once usage allows. Returns 0 (active) or 1 (decreasing).
local K, capacity = ARGV[4], tonumber(ARGV[6])
local lk = P .. 'l:' .. K
redis.call('HSET', lk, 'kind', ARGV[5], 'cap', ARGV[6], 'win', ARGV[7], 'ovg', ARGV[8], 'def', ARGV[9])
redis.call('SADD', P .. 'defs', K)
local L = load(K)
if L.enf == nil then -- new
  redis.call('HSET', lk, 'enf', ARGV[6], 'pend', 0, 'used', 0, 'act', 0, 'debt', 0, 'denied', 0)
  return 0
end
purge(L)
if capacity >= L.enf then
  L.enf = capacity; L.pend = 0
else
  L.pend = capacity
  try_decrease(L)
end
L.dirty = true
save(L)
if L.pend ~= 0 then return 1 end
return 0
