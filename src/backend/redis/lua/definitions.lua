-- definitions.lua: one page of the definitions, for a listing: SSCAN of the
-- definitions set from cursor ARGV[5], about ARGV[6] members, and each
-- one's JSON, in one call instead of one HGET per limit; with ARGV[7] =
-- 'templates', of the set of patterns and each template's JSON instead
-- (made.lua). Returns {next cursor ('0' when the pass is complete), json,
-- json, ...}; a member whose hash holds no JSON is left out. (SSCAN may
-- return a member twice in a pass: the caller drops repeats.)
local set, hash = 'defs', 'l:'
if ARGV[7] == 'templates' then set, hash = 'tpls', 't:' end
local scan = redis.call('SSCAN', P .. set, ARGV[5], 'COUNT', tonumber(ARGV[6]))
local out = {scan[1]}
for _, K in ipairs(scan[2]) do
  local json = redis.call('HGET', P .. hash .. K, 'def')
  if json then out[#out + 1] = json end
end
return out
