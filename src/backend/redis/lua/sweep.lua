-- sweep.lua: purges up to ARGV[6] limits starting after cursor ARGV[5]
-- (SSCAN over the definitions), so that a sweep never blocks Redis for
-- long: a budget's reservations whose timeout passed are refunded and
-- audited here too. Returns the next cursor ('0' when the pass is complete).
local scan = redis.call('SSCAN', P .. 'defs', ARGV[5], 'COUNT', tonumber(ARGV[6]))
for _, K in ipairs(scan[2]) do
  local L = load(K)
  if L then purge(L); save(L) end
end
return scan[1]
