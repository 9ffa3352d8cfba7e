-- sweep.lua: purges up to ARGV[6] limits starting after cursor ARGV[5]
-- (SSCAN over the definitions), so that a sweep never blocks Redis for
-- long: a budget's reservations whose timeout passed are refunded and
-- audited here too. With ARGV[7] a pattern, the limits made from that
-- template instead (ZSCAN of its m:T, made.lua: a made budget's
-- reservations are refunded and audited as any budget's), each followed,
-- and forgotten if it holds nothing; a member whose limit is gone leaves
-- m:T. Returns the next cursor ('0' when the pass is complete). With
-- ARGV[8] 'usage' as well (the template_usage op, for /metrics): the
-- cursor, then for each limit found live its capacity enforced, its used,
-- its committed and its reserved (both 0 but for a budget), as text: the
-- daemon adds them up (exactly, in 64 bits).
if ARGV[7] and ARGV[7] ~= '' then
  local mk = P .. 'm:' .. ARGV[7]
  local scan = redis.call('ZSCAN', mk, ARGV[5], 'COUNT', tonumber(ARGV[6]))
  local gone, found = {}, {scan[1]}
  for i = 1, #scan[2], 2 do
    local K = scan[2][i]
    local L = limit(K)
    if L == nil then
      gone[#gone + 1] = K
    elseif ARGV[8] == 'usage' then
      found[#found + 1] = fmt(L.enf)
      found[#found + 1] = fmt(L.used)
      found[#found + 1] = fmt(L.kind == 'b' and L.com or 0)
      found[#found + 1] = fmt(L.kind == 'b' and math.max(0, L.used - L.com) or 0)
    end
  end
  if #gone > 0 then redis.call('ZREM', mk, unpack(gone)) end
  for _, L in pairs(limits) do save(L) end
  if ARGV[8] == 'usage' then return found end
  return scan[1]
end
local scan = redis.call('SSCAN', P .. 'defs', ARGV[5], 'COUNT', tonumber(ARGV[6]))
for _, K in ipairs(scan[2]) do
  local L = load(K)
  if L then purge(L); save(L) end
end
return scan[1]
