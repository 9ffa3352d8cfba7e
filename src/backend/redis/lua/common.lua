-- common.lua: the prelude of every script of the redis backend. The C side
-- sends it concatenated with one entry script (reserve, complete, define,
-- usage, sweep), so each loaded script is self-contained.
--
-- Every script gets ARGV[1] = key prefix, ARGV[2] = "now" in ms for expiry
-- and ARGV[3] = "now" in Unix ms, or '' for both to use Redis TIME (tests
-- pass a manual clock's). Keys, for a limit K and a lease I:
--   P..'l:'..K  hash: the definition (kind r|c, cap, win ms, ovg, def JSON)
--               and the state (enf = capacity enforced now, pend = pending
--               decrease, used, debt = debt_total, denied = overage_denied_total)
--   P..'e:'..K  zset: the entries of K, member "<lease id>:<amount>", score
--               the expiry ms: expiring reads amounts from the members alone
--   P..'L:'..I  string: the lease's first outcome and its entries (lease_record
--               below), with a TTL
--   P..'defs'   set: every defined K
-- Numbers are doubles in Lua: amounts stay below 2^53 so they are exact;
-- fmt() writes them without an exponent.
local P = ARGV[1]
local NOW, UNIX_NOW
if ARGV[2] ~= '' then
  NOW = tonumber(ARGV[2]); UNIX_NOW = tonumber(ARGV[3])
else
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  UNIX_NOW = NOW
end

local ST_OK, ST_UNKNOWN, ST_DECREASING, ST_EXCEEDS = 0, 1, 2, 3
local CHUNK = 256 -- members handled per call, below Lua's unpack limit

local function fmt(x) return string.format('%.0f', x) end

local function load(K)
  local lk = P .. 'l:' .. K
  local v = redis.call('HMGET', lk, 'kind', 'enf', 'pend', 'used', 'win', 'ovg', 'debt', 'denied')
  if not v[1] then return nil end
  return {key = K, lk = lk, ek = P .. 'e:' .. K, kind = v[1],
          enf = tonumber(v[2]), pend = tonumber(v[3]), used = tonumber(v[4]), win = tonumber(v[5]),
          ovg = v[6], debt = tonumber(v[7]), denied = tonumber(v[8]), dirty = false, last_at = 0,
          adds = {}}
end

-- An entry's member: its lease and its amount, so that expiring and walking
-- need no other lookup.
-- (amount_text: the amount as written, when the caller has it: formatting
-- numbers is a large part of a script's time per lease)
local function member(id, amount, amount_text) return id .. ':' .. (amount_text or fmt(amount)) end
local function amount_of(m) return tonumber(string.match(m, ':(%d+)$')) or 0 end

-- Writes the state back: the entries added by this call in one ZADD (not one
-- per lease), the counters, and the entries' TTL past the latest expiry.
local function save(L)
  local adds = L.adds
  for first = 1, #adds, 2 * CHUNK do
    redis.call('ZADD', L.ek, unpack(adds, first, math.min(first + 2 * CHUNK - 1, #adds)))
  end
  L.adds = {}
  if L.dirty then
    redis.call('HSET', L.lk, 'enf', fmt(L.enf), 'pend', fmt(L.pend), 'used', fmt(L.used),
               'debt', fmt(L.debt), 'denied', fmt(L.denied))
    L.dirty = false
  end
  if L.last_at > 0 then
    local want = L.last_at - NOW + 1000
    if redis.call('PTTL', L.ek) < want then redis.call('PEXPIRE', L.ek, want) end
    L.last_at = 0
  end
end

local function try_decrease(L)
  if L.pend ~= 0 and L.used <= L.pend then
    L.enf = L.pend; L.pend = 0; L.dirty = true
  end
end

-- Drops every entry that expired at or before NOW, then applies a pending
-- decrease if usage allows it.
local function purge(L)
  while true do
    local expired = redis.call('ZRANGEBYSCORE', L.ek, '-inf', NOW, 'LIMIT', 0, CHUNK)
    if #expired == 0 then break end
    for i = 1, #expired do L.used = L.used - amount_of(expired[i]) end
    redis.call('ZREM', L.ek, unpack(expired))
    L.dirty = true
    if #expired < CHUNK then break end
  end
  -- The entries' TTL may have dropped what expired before anything purged it.
  if L.used ~= 0 and redis.call('EXISTS', L.ek) == 0 then L.used = 0; L.dirty = true end
  try_decrease(L)
end

-- The limits a script touches, each loaded and purged once, saved at the end
-- (the leases of one batch share them).
local limits = {}

local function limit(K)
  local L = limits[K]
  if L == nil then
    L = load(K)
    if L == nil then return nil end
    purge(L)
    limits[K] = L
  end
  return L
end

-- Adds a lease's entry to L, expiring at at_ms; written by save().
local function hold(L, id, amount, amount_text, at_ms)
  local adds = L.adds
  adds[#adds + 1] = at_ms; adds[#adds + 1] = member(id, amount, amount_text)
  L.used = L.used + amount; L.dirty = true
  if at_ms > L.last_at then L.last_at = at_ms end
end

-- A lease's record, one string: "allowed retry_after reserved_at status
-- =status_key completed forget_at n" then n times "key kind amount". Keys
-- have no spaces, so spaces separate; one GET and one SET per lease.
local function lease_encode(r)
  local parts = {r.a, r.ra_text or fmt(r.ra), r.at_text or fmt(r.at), r.s, '=' .. r.sk, r.c,
                 r.f_text or fmt(r.f), #r.entries}
  for _, e in ipairs(r.entries) do
    parts[#parts + 1] = e.key; parts[#parts + 1] = e.kind; parts[#parts + 1] = e.amount_text or fmt(e.amount)
  end
  return table.concat(parts, ' ')
end

local function lease_decode(text)
  local t = {}
  for word in string.gmatch(text, '%S+') do t[#t + 1] = word end
  local r = {a = tonumber(t[1]), ra = tonumber(t[2]), at = tonumber(t[3]), s = tonumber(t[4]),
             sk = string.sub(t[5], 2), c = tonumber(t[6]), f = tonumber(t[7]), entries = {}}
  for i = 1, tonumber(t[8]) do
    local at = 8 + 3 * (i - 1)
    r.entries[i] = {key = t[at + 1], kind = t[at + 2], amount = tonumber(t[at + 3])}
  end
  return r
end

-- Takes a lease's entry (of this amount) out of L now, if it is still there.
local function release(L, id, amount)
  if redis.call('ZREM', L.ek, member(id, amount)) == 1 then
    L.used = L.used - amount; L.dirty = true
  end
end
