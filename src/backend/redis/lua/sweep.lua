-- sweep.lua: purges up to ARGV[5] limits starting after cursor ARGV[4]
-- (SSCAN over the definitions), so that a sweep never blocks Redis for
-- long. Returns the next cursor ('0' when the pass is complete).
local scan = redis.call('SSCAN', P .. 'defs', ARGV[4], 'COUNT', tonumber(ARGV[5]))
for _, K in ipairs(scan[2]) do
  local L = load(K)
  if L then purge(L); save(L) end
end
return scan[1]
