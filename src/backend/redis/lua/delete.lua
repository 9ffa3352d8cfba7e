-- delete.lua: deletes limit ARGV[5] with all its state, in one step: its
-- definition and counters (l:K), its buckets (e:K, a:K), a budget's open
-- reservations (b:K, r:K), the daemons' allotments of it (H:K and each
-- holder's A:D:K) and its place in the definitions set (common.lua's key
-- list). Nothing is charged, refunded or audited; its audit stream stays
-- (the log outlives a definition). Lease records that hold entries of it
-- stay until their TTL: complete.lua skips such an entry, its limit being
-- gone or another incarnation (common.lua's gen). The delete is numbered
-- as a change, and the key stays in defs:changed with no definition: the
-- tombstone that tells a deleted key from one a store lost, so that no
-- daemon puts it back (define.lua's restore; changes.lua tells the
-- followers). Returns 1, or 0 for a key with no definition (nothing changes):
-- a limit made from a template (made.lua) is none.
local K = ARGV[5]
local lk = P .. 'l:' .. K
local found = redis.call('HMGET', lk, 'kind', 'tp')
if not found[1] or found[2] then return 0 end
local hk = P .. 'H:' .. K
for _, D in ipairs(redis.call('HKEYS', hk)) do redis.call('DEL', P .. 'A:' .. D .. ':' .. K) end
redis.call('DEL', lk, P .. 'e:' .. K, P .. 'a:' .. K, P .. 'b:' .. K, P .. 'r:' .. K, hk)
redis.call('SREM', P .. 'defs', K)
number_change(K)
return 1
