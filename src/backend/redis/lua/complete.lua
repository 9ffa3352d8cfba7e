-- complete.lua: completes a batch of leases. ARGV[5] = 1 to relay the
-- Completes of leases Redis does not know (below), ARGV[6] = count, then
-- per lease: id, n, and n pairs (key, actual_amount). Releases holds, shrinks a
-- rolling reservation to its actual amount for the rest of its window,
-- charges a budget's actual to its reservation's period (budget.lua), and
-- charges overage per the limit's policy. Every rolling and budget key the
-- lease charged gets its audit entry (audit.lua), with the actual the
-- Complete gave for it, or what it reserved if it gave none. Unknown, denied
-- or already completed leases change nothing. Returns nothing useful
-- (always ok).
--
-- With allotments (allot.lua) a lease may have been decided by one daemon
-- from its allotment and be completed through another, which forwards the
-- Complete here: Redis has no record of it, so the Complete is relayed to
-- every daemon through the stream P..'relay' (fields l = lease id, a = its
-- "key actual ..." pairs), which each reads at its keeper's steps and
-- applies if the lease is its own. The stream keeps the last RELAY_MAX and
-- lives RELAY_TTL_MS after its last entry: a relayed Complete older than
-- that is lost, and the lease's holds end with their timeouts.
local RELAY_MAX, RELAY_TTL_MS = 10000, 120000
local relay = ARGV[5] == '1'

-- A lease record (see common.lua) read once: allowed and completed, its
-- entries: key, kind, amount, its bucket X as text (x as a number) and the
-- incarnation of its limit (gen), and its job id.
local function read_record(text)
  local words, job = split_job(text)
  local t = {}
  for word in string.gmatch(words, '%S+') do t[#t + 1] = word end
  local gens, tgs = {}, {}
  local g = string.match(words, ' %^([%d,/]+)')
  if g then
    for x in string.gmatch(g, '[^,]+') do
      local gen, tg = string.match(x, '^(%d+)/?(%d*)$')
      gens[#gens + 1] = tonumber(gen) or 0
      tgs[#gens] = tonumber(tg) -- nil but for a limit made from a template
    end
  end
  local entries = {}
  for i = 1, tonumber(t[8]) do
    local at = 8 + 4 * (i - 1)
    entries[i] = {key = t[at + 1], kind = t[at + 2], amount = tonumber(t[at + 3]), X = t[at + 4],
                  x = tonumber(t[at + 4]), gen = gens[i] or 0, tg = tgs[i]}
  end
  return tonumber(t[1]), tonumber(t[6]), entries, job
end

-- True while the entry still counts in its limit: its bucket has not
-- expired (buckets that did were purged when L was loaded, and a limit
-- whose buckets the TTL dropped has no live entries).
local function is_live(L, e) return e.x > NOW and L.act > 0 end

-- Gives a live entry a new amount, keeping its expiry; 0 takes it out.
local function resize(L, e, amount)
  if amount == 0 then change_bucket(L, e.x, -e.amount, -1) else change_bucket(L, e.x, amount - e.amount, 0) end
  e.amount = amount
end

local function reconcile(L, e, actual)
  if not is_live(L, e) then return end -- its window is over
  if actual < e.amount then
    resize(L, e, actual)
  elseif actual > e.amount then
    -- against what the limit's reservations really hold (allotments' unused room aside)
    resize(L, e, e.amount + overage_charge(L, actual - e.amount, L.used - allotments_of(L)))
  end
end

-- True when rolling entry e of a made limit outlived its limit (forgotten
-- once it held nothing, its window over: nothing of e is live): its
-- Complete is still audited, as the limit's would be. Not when the
-- template was deleted since (its incarnation e.tg gone), nor when the key
-- had a limit of its own deleted since (its tombstone, delete.lua): a
-- deleted limit's Complete is skipped.
local function outlived_made(e)
  if e.tg == nil or e.kind ~= 'r' then return false end
  if redis.call('HEXISTS', P .. 'tpl:ids', e.tg) == 0 then return false end
  return (tonumber(redis.call('ZSCORE', P .. 'defs:changed', e.key)) or 0) < e.gen
end

-- The record with its completed flag set.
local function completed(text) return (string.gsub(text, '^(%d+ %d+ %d+ %d+ =%S* )0', '%11', 1)) end

local function complete(id, base, n)
  local lease = P .. 'L:' .. id
  local known = redis.call('GET', lease)
  if not known then
    if relay then
      local pairs_text = {}
      for i = 1, n do pairs_text[i] = ARGV[base + 2 * i] .. ' ' .. ARGV[base + 2 * i + 1] end
      local k = P .. 'relay'
      redis.call('XADD', k, 'MAXLEN', '~', RELAY_MAX, '*', 'l', id, 'a', table.concat(pairs_text, ' '))
      redis.call('PEXPIRE', k, RELAY_TTL_MS)
    end
    return
  end
  local a, c, recorded, job = read_record(known)
  if a ~= 1 or c == 1 then return end
  local actuals = {} -- K -> the actual the Complete gives
  for i = 1, n do actuals[ARGV[base + 2 * i]] = tonumber(ARGV[base + 2 * i + 1]) end
  for _, e in ipairs(recorded) do
    local L = limit(e.key)
    local actual = actuals[e.key]
    if L ~= nil and L.gen ~= e.gen then L = nil end -- deleted since, and defined again: not this entry's
    if L == nil then -- nothing to charge: the limit was deleted, or the store lost it
      if outlived_made(e) then audit({key = e.key}, UNIX_NOW, id, job, e.amount, actual or e.amount, 0, false) end
    elseif e.kind == 'c' then
      if is_live(L, e) then change_bucket(L, e.x, -e.amount, -1) end
    elseif e.kind == 'b' then
      budget_charge(L, id, actual)
    else
      local reserved = e.amount -- reconcile resizes the entry
      if actual ~= nil then reconcile(L, e, actual) end
      audit(L, UNIX_NOW, id, job, reserved, actual or reserved, 0, false)
    end
  end
  redis.call('SET', lease, completed(known), 'KEEPTTL')
end

local at = 7
for _ = 1, tonumber(ARGV[6]) do
  local n = tonumber(ARGV[at + 1])
  complete(ARGV[at], at, n)
  at = at + 2 + 2 * n
end
for _, L in pairs(limits) do try_decrease(L); save(L) end
return 0
