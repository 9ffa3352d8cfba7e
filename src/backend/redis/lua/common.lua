-- common.lua: the prelude of every script of the redis backend. The C side
-- sends it concatenated with audit.lua, budget.lua, made.lua and one entry script
-- (reserve, complete, define, usage, sweep, ...), so each loaded script is
-- self-contained; before it, one line sets COUNTER_MAX (below).
--
-- Every script gets ARGV[1] = key prefix, ARGV[2] = "now" in ms for expiry
-- and ARGV[3] = "now" in Unix ms, or '' for both to use Redis TIME (tests
-- pass a manual clock's), and ARGV[4] = how long the audit log keeps an
-- entry, in ms (audit.lua). Keys, for a limit K and a lease I:
--   P..'l:'..K  hash: the definition (kind r|c|b, cap, win ms: a window or
--               a timeout, ovg, def JSON, for a budget cal: its period and
--               zone) and the state (enf = capacity enforced now, pend =
--               pending decrease, used, act = live entries, debt =
--               debt_total, denied = overage_denied_total; a budget's ps and
--               pe = its period counted now in Unix ms, com = the actuals
--               charged in it, and used = com + what that period's open
--               reservations hold: budget.lua)
--   P..'e:'..K  zset: the expiry times X of K's live entries, member and
--               score both X in ms. Entries that expire together free
--               together, so they share one bucket: a script call adds one
--               member per limit however many leases it admits.
--   P..'a:'..K  hash: per bucket X, field X = the amount of its entries and
--               field '#'..X = how many entries it holds
--   P..'b:'..K, P..'r:'..K  a budget's open reservations, one by one
--               (budget.lua)
--   P..'audit:'..K  stream: the audit log of spend on K (audit.lua)
--   P..'L:'..I  string: the lease's first outcome and its entries (see
--               reserve.lua), with a TTL
--   P..'defs'   set: every defined K
--   P..'defs:version', P..'defs:changed'  the numbered changes of the
--               definitions and templates (number_change below; define.lua,
--               delete.lua, template.lua)
--   P..'t:'..T, P..'tpls', P..'tpl:ids', P..'m:'..T  the template of
--               pattern T, the set of patterns, and the limits made from
--               them (made.lua)
--   P..'H:'..K, P..'A:'..D..':'..K  daemons' allotments of K (allot.lua)
--   P..'relay'  Completes relayed to the daemons (complete.lua)
-- A limit deleted (delete.lua) loses l:, e:, a:, b:, r:, H: and the A:
-- records, and its place in defs; its audit stream stays, and its key
-- stays in defs:changed with no definition: its tombstone. A limit defined
-- again over a tombstone is another incarnation: l:K's 'gen' (its change
-- number; 0, absent, for a key never deleted), written with each entry in
-- a lease record, so that a Complete never touches the new limit for an
-- entry of the old one; and the incarnation a daemon's allotments and its
-- settles are of (allot.lua, settle.lua), so that nothing the old limit's
-- allotments held or admitted is counted in the new one.
-- e:K and a:K expire a second after their latest bucket, and the lease
-- records with the lease's memory: Redis memory stays bounded whatever
-- clients never complete. A budget's reservations leave one by one, each
-- refunded and audited, when a script or a sweep finds its timeout passed.
-- Numbers are doubles in Lua: amounts stay below 2^53 so they are exact;
-- fmt() writes them without an exponent (redis.call would write %.14g).
-- Counters (used, com, debt, denied) saturate at COUNTER_MAX, 2^53, the
-- C side's RL_COUNTER_MAX (core/counter.h says why): every counter and
-- amount is exact, and so is each difference of two; a sum of two may not
-- be (2^53 + 1 is no double), so a comparison never adds two of them
-- (amount > L.enf - L.used, not L.used + amount > L.enf). An entry holds,
-- and gives back when it leaves, what fitted under the ceiling when it
-- was added or grown: counter_fit below, in hold and change_bucket.
local P = ARGV[1]
local NOW, UNIX_NOW
if ARGV[2] ~= '' then
  NOW = tonumber(ARGV[2]); UNIX_NOW = tonumber(ARGV[3])
else
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  UNIX_NOW = NOW
end

-- Reserve statuses; ST_BOUNDS: a budget whose period bounds the daemon did
-- not pass (budget.lua), so that it reads the budget's definition and asks again.
local ST_OK, ST_UNKNOWN, ST_DECREASING, ST_EXCEEDS, ST_CONFLICT, ST_BOUNDS = 0, 1, 2, 3, 4, 5
local CHUNK = 256 -- members handled per call, below Lua's unpack limit

local function fmt(x) return string.format('%.0f', x) end

-- counter + amount, at most COUNTER_MAX (x + y rounds, but never below
-- the ceiling when the exact sum is above it).
local function counter_add(counter, amount) return math.min(counter + amount, COUNTER_MAX) end

-- Of amount, what can still be added to counter under the ceiling.
local function counter_fit(counter, amount) return math.min(amount, math.max(0, COUNTER_MAX - counter)) end

-- A counter as stored (nil: 0), never above the ceiling: a state written
-- before counters saturated may hold more.
local function counter_of(text) return math.min(tonumber(text) or 0, COUNTER_MAX) end

-- Of extra units charged on top of used, the part above capacity cap
-- (what overage adds to debt_total), without the inexact used + extra.
local function counter_above(used, extra, cap)
  if used >= cap then return extra end
  return math.max(0, extra - (cap - used))
end

local function load(K)
  local lk = P .. 'l:' .. K
  local v = redis.call('HMGET', lk, 'kind', 'enf', 'pend', 'used', 'win', 'ovg', 'debt', 'denied', 'act',
                       'cal', 'ps', 'pe', 'com', 'gen', 'tp', 'tv', 'tg', 'mx')
  if not v[1] then return nil end
  local win = tonumber(v[5])
  return {key = K, lk = lk, ek = P .. 'e:' .. K, ak = P .. 'a:' .. K, kind = v[1],
          enf = tonumber(v[2]), pend = tonumber(v[3]) or 0, used = counter_of(v[4]), win = win,
          ovg = v[6], debt = counter_of(v[7]), denied = counter_of(v[8]), act = tonumber(v[9]) or 0,
          cal = v[10], ps = tonumber(v[11]) or 0, pe = tonumber(v[12]) or 0, com = counter_of(v[13]),
          gen = tonumber(v[14]) or 0,
          -- made from a template (made.lua): its pattern, the template's
          -- version and incarnation it follows, its place in m:T (nil: a
          -- limit defined by its own key)
          tp = v[15] or nil, tv = tonumber(v[16]) or 0, tg = tonumber(v[17]) or 0, mx = tonumber(v[18]) or 0,
          bk = P .. 'b:' .. K, rk = P .. 'r:' .. K,
          dirty = false,
          at = NOW + win, at_text = fmt(NOW + win), -- the bucket of entries made now
          add_amount = 0, add_count = 0,            -- what this call adds to it
          changes = nil,                            -- X -> {amount, count} deltas of older buckets
          last_at = 0}                              -- the latest bucket written
end

-- Sets key's TTL to at least want_ms (a key without one gets it too).
local function extend_ttl(key, want_ms)
  if redis.call('PTTL', key) < want_ms then redis.call('PEXPIRE', key, want_ms) end
end

-- Writes the entries this call added to their bucket (one ZADD and one HSET
-- per limit, not per lease).
local function flush_adds(L)
  if L.add_count == 0 then return end
  local X = L.at_text
  if redis.call('ZADD', L.ek, 'NX', X, X) == 1 then
    redis.call('HSET', L.ak, X, fmt(L.add_amount), '#' .. X, L.add_count)
  else -- an earlier call in the same ms made it
    redis.call('HINCRBY', L.ak, X, fmt(L.add_amount))
    redis.call('HINCRBY', L.ak, '#' .. X, L.add_count)
  end
  L.add_amount, L.add_count = 0, 0
  if L.at > L.last_at then L.last_at = L.at end
end

-- made.lua's: a made limit written, kept (TTLs, its place in m:T) or
-- forgotten by save(). Declared here, for save().
local made_save, made_kept

-- Writes the state back: new entries, changed buckets, the counters, and
-- the buckets' TTL past the latest one. A limit made from a template is
-- written only while it holds something (made.lua).
local function save(L)
  if L.tp and not made_save(L) then return end
  flush_adds(L)
  if L.changes then
    for X, d in pairs(L.changes) do
      if d[1] ~= 0 then redis.call('HINCRBY', L.ak, X, fmt(d[1])) end
      if d[2] ~= 0 then redis.call('HINCRBY', L.ak, '#' .. X, d[2]) end
      local x = tonumber(X)
      if x > L.last_at then L.last_at = x end
    end
    L.changes = nil
  end
  if L.dirty then
    redis.call('HSET', L.lk, 'enf', fmt(L.enf), 'pend', fmt(L.pend), 'used', fmt(L.used),
               'act', L.act, 'debt', fmt(L.debt), 'denied', fmt(L.denied))
    if L.kind == 'b' then redis.call('HSET', L.lk, 'ps', fmt(L.ps), 'pe', fmt(L.pe), 'com', fmt(L.com)) end
    L.dirty = false
  end
  if L.last_at > 0 and L.kind ~= 'b' then
    local want = L.last_at - NOW + 1000
    extend_ttl(L.ek, want); extend_ttl(L.ak, want)
  end
  if L.tp then made_kept(L) end
  L.last_at = 0
end

-- Moves L's bucket X (ms) by amount and count: for entries that do not
-- expire with this call's own bucket (an allotment's, a settled overage's,
-- a completed reservation's). Written by save(). A growth moves it by what
-- fits under the counter ceiling.
local function change_bucket(L, X, amount_delta, count_delta)
  if amount_delta > 0 then amount_delta = counter_fit(L.used, amount_delta) end
  if L.changes == nil then L.changes = {} end
  local key = fmt(X)
  local d = L.changes[key]
  if d == nil then d = {0, 0}; L.changes[key] = d end
  d[1] = d[1] + amount_delta; d[2] = d[2] + count_delta
  L.used = L.used + amount_delta; L.act = L.act + count_delta; L.dirty = true
end

-- A new entry of amount on L expiring at X (ms), in its own bucket.
local function add_entry(L, X, amount)
  redis.call('ZADD', L.ek, 'NX', X, fmt(X))
  change_bucket(L, X, amount, 1)
end

-- Daemons' allotments of L (allot.lua) are in L.used at their full amount
-- and in L.act as one entry each. What they said they hold live of them:
-- the amount set aside and not used, how many allotments, and how many
-- entries they hold (all 0 without allotments).
local function allotments_of(L)
  local unused, count, entries = 0, 0, 0
  local holders = redis.call('HGETALL', P .. 'H:' .. L.key)
  for i = 2, #holders, 2 do
    local x, amount, live, n = string.match(holders[i], '^(%d+) (%d+) (%d+) (%d+) %d+$')
    if x and tonumber(x) > NOW then
      unused = unused + tonumber(amount) - tonumber(live)
      count = count + 1
      entries = entries + tonumber(n)
    end
  end
  return math.min(unused, L.used), math.min(count, L.act), entries
end

-- Overage (docs/concepts.md, "Overage"): of extra units more than a rolling
-- reservation held, what L charges by its policy (debt: all of it, the
-- part above capacity counted as debt; deny: what fits, the rest counted),
-- with used what L's reservations really hold (L.used unless allotments
-- hold part of it unused).
local function overage_charge(L, extra, used)
  used = used or L.used
  if L.ovg == 'debt' then
    L.debt = counter_add(L.debt, counter_above(used, extra, L.enf))
    return extra
  end
  local charged = math.min(extra, math.max(0, L.enf - used))
  L.denied = counter_add(L.denied, extra - charged)
  return charged
end

-- A pending decrease applies once usage fits, allotments counted in full:
-- what their daemons said they hold live may have grown since (each gives
-- back its unused room at its next look, when it sees the decrease).
local function try_decrease(L)
  if L.pend ~= 0 and L.used <= L.pend then
    L.enf = L.pend; L.pend = 0; L.dirty = true
  end
end

-- budget.lua's: a budget's purge (its reservations due refunded, its next
-- period started when the bounds say so), and the changes of kind and
-- calendar. Declared here, for purge() and redefine().
local budget_purge, budget_enter, budget_leave

-- Drops every bucket that expired at or before NOW (a budget: every
-- reservation whose timeout passed), then applies a pending decrease if
-- usage allows it.
local function purge(L)
  if L.kind == 'b' then
    budget_purge(L)
    try_decrease(L)
    return
  end
  while true do
    local expired = redis.call('ZRANGEBYSCORE', L.ek, '-inf', NOW, 'LIMIT', 0, CHUNK)
    local k = #expired
    if k == 0 then break end
    local fields = {}
    for i = 1, k do fields[2 * i - 1] = expired[i]; fields[2 * i] = '#' .. expired[i] end
    local v = redis.call('HMGET', L.ak, unpack(fields))
    for i = 1, k do
      L.used = L.used - (tonumber(v[2 * i - 1]) or 0)
      L.act = L.act - (tonumber(v[2 * i]) or 0)
    end
    redis.call('HDEL', L.ak, unpack(fields))
    redis.call('ZREM', L.ek, unpack(expired))
    L.dirty = true
    if k < CHUNK then break end
  end
  -- The TTL may have dropped buckets before anything purged them.
  if (L.used ~= 0 or L.act ~= 0) and redis.call('EXISTS', L.ek, L.ak) < 2 then
    redis.call('DEL', L.ek, L.ak)
    L.used = 0; L.act = 0; L.dirty = true
  end
  try_decrease(L)
end

-- True while L holds anything a change of kind would have to honour:
-- live entries, or (but for a budget, whose charges are no hold) units.
-- unused, allotments, entries: allotments_of(L)'s, or zeros.
local function holds_live(L, unused, allotments, entries)
  return L.act - allotments + entries ~= 0 or (L.kind ~= 'b' and L.used - unused ~= 0)
end

-- Gives L (loaded and purged) the definition kind, capacity, win (ms),
-- ovg, cal (a budget's, with its bounds taken: budget.lua), as
-- apply_definition says: an increase at once (a pending decrease
-- cancelled), a decrease once usage allows; a change of kind only while L
-- holds nothing (allotments aside: define.lua passes allotments_of(L)).
-- Returns 0 (active), 1 (decreasing) or 2 (in use: nothing changed).
-- The caller writes the definition's own fields and saves L.
local function redefine(L, kind, capacity, win, ovg, cal, unused, allotments, entries)
  if L.kind ~= kind and holds_live(L, unused, allotments, entries) then return 2 end
  if kind == 'b' and (L.kind ~= 'b' or L.cal ~= cal) then
    budget_enter(L, cal)
  elseif kind ~= 'b' and L.kind == 'b' then
    budget_leave(L)
  end
  L.kind, L.win, L.ovg = kind, win, ovg
  L.at = NOW + win; L.at_text = fmt(L.at)
  if capacity >= L.enf then
    L.enf = capacity; L.pend = 0
  else
    L.pend = capacity
    try_decrease(L)
  end
  L.dirty = true
  if L.pend ~= 0 then return 1 end
  return 0
end

-- made.lua's: K's limit made from the template the daemon names for it
-- (nil if none), and a made limit brought in line with its template (nil
-- if it was dropped). Declared here, for limit().
local made_from, made_follow

-- The limits a script touches, each loaded and purged once, saved at the end
-- (the leases of one batch share them). A key without a limit of its own
-- is made from its template when the daemon names one (made.lua).
local limits = {}

local function limit(K)
  local L = limits[K]
  if L == nil then
    L = load(K)
    if L ~= nil then
      purge(L)
      if L.tp then L = made_follow(L) end
    end
    if L == nil then
      L = made_from(K) -- new: nothing to purge
      if L == nil then return nil end
    end
    limits[K] = L
  end
  return L
end

-- Adds a lease's entry of amount to L's bucket of now; written by save().
-- An admitted amount always fits under the counter ceiling.
local function hold(L, amount)
  amount = counter_fit(L.used, amount)
  L.add_amount = L.add_amount + amount; L.add_count = L.add_count + 1
  L.used = L.used + amount; L.act = L.act + 1; L.dirty = true
end

-- Numbers a change of K's definition (define.lua, delete.lua) for the
-- daemons that follow them (changes.lua): P..'defs:version' holds the
-- store's epoch and the number of the last change, P..'defs:changed' ranks
-- each key by the number of its last change. Returns that number.
local function number_change(K)
  local n = redis.call('HINCRBY', P .. 'defs:version', 'n', 1)
  redis.call('ZADD', P .. 'defs:changed', n, K)
  return n
end

-- The store's epoch, made with its first numbered change, so that a store
-- that lost everything gets a new one (changes.lua).
local function ensure_epoch()
  local version_key = P .. 'defs:version'
  if redis.call('HEXISTS', version_key, 'epoch') == 0 then
    local t = redis.call('TIME')
    redis.call('HSET', version_key, 'epoch', t[1] .. '.' .. t[2])
  end
end

-- A lease record, one string: "allowed retry_after reserved_at status
-- =status_key completed forget_at n" then n times "key kind amount X" (X:
-- the entry's bucket; a budget's: its timeout), then, if any of its limits
-- is an incarnation after a delete or made from a template, "^G1,...,Gn"
-- (each entry's limit's gen, common.lua's key list; none: all 0; a made
-- limit's as "gen/tg", made.lua), then "#F": F the
-- fingerprint of the reserve's requirements (core/lease_fingerprint.h;
-- records written before it have none). Keys have no spaces, so spaces
-- separate. An admitted lease with a job id ends with a newline and the job
-- id, as the reserve gave it (for the audit log): nothing before it holds a
-- newline, so the first one starts the job id, whatever bytes it has.
local HEAD = '^(%d+) (%d+) (%d+) (%d+) =(%S*) (%d) (%d+)'

-- A record's words, and its job id ('' if none).
local function split_job(text)
  local at = string.find(text, '\n', 1, true)
  if at == nil then return text, '' end
  return string.sub(text, 1, at - 1), string.sub(text, at + 1)
end

-- The outcome a record holds: allowed, retry_after, reserved_at, status,
-- status key, then completed and forget_at.
local function lease_head(text)
  local a, ra, at, s, sk, c, f = string.match(text, HEAD)
  return tonumber(a), tonumber(ra), tonumber(at), tonumber(s), sk, tonumber(c), tonumber(f)
end
