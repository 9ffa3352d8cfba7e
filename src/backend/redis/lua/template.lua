-- template.lua: puts or deletes a template (made.lua says what one is).
-- ARGV[5] = mode, ARGV[6] = the pattern T, then:
--   'put' (an admin change) or 'restore' (put back a template the store
--     lost: one it holds, or deleted, is left as it is): ARGV[7..12] kind
--     (r|c|b), capacity, lifetime ms (window or timeout), overage
--     (debt|deny), the template's JSON, a budget's cal ('' otherwise), and
--     ARGV[13] the most templates there may be. Returns 0 put, 2 in use (a
--     change of kind while a limit made from T holds something: nothing
--     written), 3 left as it was (restore of a template the store holds),
--     4 left deleted (restore of one it deleted), 5 full (a new pattern
--     beyond ARGV[13]: nothing written).
--   'delete': returns {1, n, tg} (deleted: its limits are being dropped, n
--     of them still to go: 'drop' goes on with the incarnation tg) or
--     {0, 0} (no such template).
--   'drop': ARGV[7] = the deleted template's incarnation: drops the next
--     page of the limits made from it. Returns {1, n left}.
--
-- A put is numbered as a change of the member 'template '..T for the
-- daemons that follow (changes.lua); its limits follow it lazily
-- (made.lua). A change of kind is refused while any limit made from T
-- holds something (after expiring what is due), as define.lua refuses one
-- for a limit; the limits looked at are those m:T may hold live, at most
-- CHECK_MAX (beyond that the change is refused as in use: a template with
-- so many limits live is in use by any measure). A delete removes the
-- template (no limit is made from it any more), leaves its tombstone in
-- defs:changed, and drops the limits made from it a page at a time (each
-- page a short script call), as delete.lua drops a limit; a made limit
-- touched before its page comes is dropped then (its template's
-- incarnation is gone).
local CHECK_MAX, DROP_PAGE = 10000, 500
local mode, T = ARGV[5], ARGV[6]
local tk = P .. 't:' .. T
local member = 'template ' .. T

-- Drops a page of the limits of T's incarnation tg listed in the zset dead.
-- Returns how many are left to drop.
local function drop(dead, tg)
  local page = redis.call('ZPOPMIN', dead, DROP_PAGE)
  for i = 1, #page, 2 do
    local K = page[i]
    local v = redis.call('HMGET', P .. 'l:' .. K, 'tp', 'tg')
    if v[1] == T and tonumber(v[2]) == tg then
      redis.call('DEL', P .. 'l:' .. K, P .. 'e:' .. K, P .. 'a:' .. K, P .. 'b:' .. K, P .. 'r:' .. K)
    end
  end
  return redis.call('ZCARD', dead)
end

if mode == 'delete' then
  local tg = tonumber(redis.call('HGET', tk, 'tg'))
  if not tg then return {0, 0} end
  redis.call('DEL', tk)
  redis.call('SREM', P .. 'tpls', T)
  redis.call('HDEL', P .. 'tpl:ids', fmt(tg))
  number_change(member)
  local dead = P .. 'm~:' .. fmt(tg) -- keeps m:T's TTL: it ends with its last limit
  if redis.call('EXISTS', P .. 'm:' .. T) == 1 then redis.call('RENAME', P .. 'm:' .. T, dead) end
  return {1, drop(dead, tg), fmt(tg)}
end
if mode == 'drop' then
  return {1, drop(P .. 'm~:' .. ARGV[7], tonumber(ARGV[7]))}
end

local restore, kind = mode == 'restore', ARGV[7]
local old = redis.call('HMGET', tk, 'kind', 'tg')
if restore and old[1] then return 3 end
if restore and redis.call('ZSCORE', P .. 'defs:changed', member) then return 4 end
if not old[1] and redis.call('SCARD', P .. 'tpls') >= tonumber(ARGV[13]) then return 5 end
if old[1] and old[1] ~= kind then
  local tg = tonumber(old[2])
  local live = redis.call('ZRANGEBYSCORE', P .. 'm:' .. T, '(' .. fmt(NOW), '+inf', 'LIMIT', 0, CHECK_MAX + 1)
  if #live > CHECK_MAX then return 2 end
  local in_use = false
  for _, K in ipairs(live) do
    local L = load(K)
    if L and L.tp == T and L.tg == tg then
      purge(L)
      limits[K] = L
      if holds_live(L, 0, 0, 0) then in_use = true; break end
    end
  end
  for _, L in pairs(limits) do save(L) end -- what the purges freed (a limit left empty is forgotten)
  if in_use then return 2 end
end
ensure_epoch()
local n = number_change(member)
redis.call('HSET', tk, 'kind', kind, 'cap', ARGV[8], 'win', ARGV[9], 'ovg', ARGV[10], 'def', ARGV[11], 'v', fmt(n))
if kind == 'b' then redis.call('HSET', tk, 'cal', ARGV[12]) else redis.call('HDEL', tk, 'cal') end
if not old[1] then
  redis.call('HSET', tk, 'tg', fmt(n))
  redis.call('HSET', P .. 'tpl:ids', fmt(n), T)
  redis.call('SADD', P .. 'tpls', T)
end
return 0
