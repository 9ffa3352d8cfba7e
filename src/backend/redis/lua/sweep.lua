-- sweep.lua: purges up to ARGV[6] limits starting after cursor ARGV[5]
-- (SSCAN over the definitions), so that a sweep never blocks Redis for
-- long: a budget's reservations whose timeout passed are refunded and
-- audited here too. With ARGV[7] a pattern, the limits made from that
-- template instead (ZSCAN of its m:T, made.lua: a made budget's
-- reservations are refunded and audited as any budget's), each followed,
-- and forgotten if it holds nothing; a member whose limit is gone leaves
-- m:T. Returns the next cursor ('0' when the pass is complete).
if ARGV[7] and ARGV[7] ~= '' then
  local mk = P .. 'm:' .. ARGV[7]
  local scan = redis.call('ZSCAN', mk, ARGV[5], 'COUNT', tonumber(ARGV[6]))
  local gone = {}
  for i = 1, #scan[2], 2 do
    local K = scan[2][i]
    if limit(K) == nil then gone[#gone + 1] = K end
  end
  if #gone > 0 then redis.call('ZREM', mk, unpack(gone)) end
  for _, L in pairs(limits) do save(L) end
  return scan[1]
end
local scan = redis.call('SSCAN', P .. 'defs', ARGV[5], 'COUNT', tonumber(ARGV[6]))
for _, K in ipairs(scan[2]) do
  local L = load(K)
  if L then purge(L); save(L) end
end
return scan[1]
