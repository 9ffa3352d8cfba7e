-- definitions.lua: one page of the definitions, for a listing: SSCAN of the
-- definitions set from cursor ARGV[5], about ARGV[6] members, and each
-- one's JSON, in one call instead of one HGET per limit. Returns {next
-- cursor ('0' when the pass is complete), json, json, ...}; a key whose hash
-- holds no definition is left out. (SSCAN may return a key twice in a pass:
-- the caller drops repeats.)
local scan = redis.call('SSCAN', P .. 'defs', ARGV[5], 'COUNT', tonumber(ARGV[6]))
local out = {scan[1]}
for _, K in ipairs(scan[2]) do
  local json = redis.call('HGET', P .. 'l:' .. K, 'def')
  if json then out[#out + 1] = json end
end
return out
