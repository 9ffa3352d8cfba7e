-- made.lua: limits made from templates (ratelimiter/backend.h,
-- put_template), the prelude after budget.lua. A template of pattern T is
-- the hash P..'t:'..T: kind, cap, win (ms), ovg, cal (a budget's), def (its
-- JSON, for listings and followers), v (its version: the number of the
-- change that put it, common.lua's number_change, under the member
-- 'template '..T, which no key can be: keys have no spaces) and tg (its
-- incarnation: the number of the change that created it; a pattern deleted
-- and put again is another). P..'tpls' is the set of patterns, and
-- P..'tpl:ids' maps each incarnation tg to its pattern.
--
-- The daemon matches a call's keys against its copy of the templates and
-- passes, for each key a template matches, the pattern that wins
-- (TEMPLATES). Redis stays the authority: a key with a limit of its own
-- (define.lua) ignores it; a key with none gets a limit made from the
-- template Redis holds for that pattern (none if it was deleted meanwhile).
--
-- A made limit is l:K and its other keys as any limit's, with tp = T, tv =
-- the version of the template it follows, tg = the template's incarnation,
-- mx = its score in P..'m:'..T (below), and no 'def' (it is not a
-- definition: not in P..'defs', never listed, followed or put back). It is
-- written only once it holds something, and forgotten once it holds
-- nothing: deleted by the script that sees it empty, and in any case by
-- the TTLs every script that touches it extends to cover what it holds
-- (rolling and concurrency: its last bucket + 1 s, as e:K and a:K; a
-- budget: its reservations' timeouts + 1 s, and the end of its period while
-- the period has charges). Its 'gen' is new at every making (the change
-- counter, so that no lease record's entry of an earlier incarnation, or
-- of the key's own limit before, ever touches it), and a lease record
-- writes its entries' gen as 'gen/tg' (common.lua's record).
--
-- P..'m:'..T: a zset of the keys made from T, each scored by a time (NOW's
-- clock) no earlier than its keys' expiry, so that the members below NOW
-- are forgotten limits (removed when a limit of T is made), and the set
-- itself expires after its last member. For delete_template and a change
-- of kind (template.lua), and the sweep of made budgets (sweep.lua).
--
-- A template put again (a new version) is followed by its made limits
-- lazily, when a script next touches one, before anything else reads it:
-- as define.lua applies a definition (an increase at once, a decrease once
-- usage allows; a change of kind only while it holds nothing, else it
-- stays as it was until it does), so every answer is the one an eager
-- change would give. A made limit whose template was deleted (its tg no
-- longer T's) is dropped when touched, as delete.lua drops a limit; and a
-- made limit the daemon names a more specific template for (one put since
-- it was made) follows that one from then on.

local TEMPLATES = {} -- K -> the pattern the daemon says makes K's limit

-- ARGV[at] = n, then n pairs (K, pattern). Returns the index after them.
local function read_templates(at)
  local n = tonumber(ARGV[at])
  for i = 0, n - 1 do TEMPLATES[ARGV[at + 1 + 2 * i]] = ARGV[at + 2 + 2 * i] end
  return at + 1 + 2 * n
end

local TPL = {} -- pattern -> its template as read in this call, or false

local function template(T)
  local t = TPL[T]
  if t == nil then
    local v = redis.call('HMGET', P .. 't:' .. T, 'kind', 'cap', 'win', 'ovg', 'cal', 'v', 'tg')
    t = false
    if v[1] then
      t = {kind = v[1], cap = tonumber(v[2]), win = tonumber(v[3]), ovg = v[4], cal = v[5] or '',
           v = tonumber(v[6]), tg = tonumber(v[7])}
    end
    TPL[T] = t
  end
  return t or nil
end

-- core/template_pattern.h's order: more literal characters, then fewer
-- placeholders, then byte order. True when pattern a takes precedence over b.
local function weight(T)
  local literal, holes = #T, 0
  for name in string.gmatch(T, '{([%w_]+)}') do literal = literal - #name - 2; holes = holes + 1 end
  return literal, holes
end

local function precedes(a, b)
  local la, ha = weight(a)
  local lb, hb = weight(b)
  if la ~= lb then return la > lb end
  if ha ~= hb then return ha < hb end
  return a < b
end

-- Drops made limit L with all it holds (delete.lua's rule: nothing
-- charged, refunded or audited; made limits have no allotments).
local function drop_made(L)
  redis.call('DEL', L.lk, L.ek, L.ak, L.bk, L.rk)
end

-- A new incarnation's gen for made limit L, once it is to hold something.
local function made_incarnate(L)
  if L.gen == 0 then L.gen = redis.call('HINCRBY', P .. 'defs:version', 'n', 1) end
end

-- An entry's incarnation in a lease record: 'gen', or 'gen/tg' for a made
-- limit; formatted once per call (every lease of a batch writes it).
local function gen_token(L)
  local token = L.token
  if token == nil or L.token_gen ~= L.gen then
    token = fmt(L.gen)
    if L.tp then token = token .. '/' .. fmt(L.tg) end
    L.token, L.token_gen = token, L.gen
  end
  return token
end

-- K's limit made from the template of pattern T (nil if Redis holds none),
-- as a fresh limit not yet in Redis (L.virtual: save() writes it once it
-- holds something).
local function fresh(K, T)
  local t = template(T)
  if not t then return nil end
  local L = {key = K, lk = P .. 'l:' .. K, ek = P .. 'e:' .. K, ak = P .. 'a:' .. K, kind = t.kind,
             enf = t.cap, pend = 0, used = 0, win = t.win, ovg = t.ovg, debt = 0, denied = 0, act = 0,
             cal = t.kind == 'b' and t.cal or nil, ps = 0, pe = 0, com = 0, gen = 0,
             tp = T, tv = t.v, tg = t.tg, mx = 0, virtual = true,
             bk = P .. 'b:' .. K, rk = P .. 'r:' .. K, dirty = false,
             at = NOW + t.win, at_text = fmt(NOW + t.win), add_amount = 0, add_count = 0, changes = nil, last_at = 0}
  if t.kind == 'b' then
    local b = bounds_of(L)
    if b then L.ps, L.pe = period_now(b) end -- else the reserve asks for them (ST_BOUNDS)
  end
  return L
end

-- common.lua's made_from: K's limit made from the template the daemon named
-- for it.
made_from = function(K)
  local T = TEMPLATES[K]
  if not T then return nil end
  return fresh(K, T)
end

-- Enters made limit L in m:T until mx (NOW's clock); m:T lives as long,
-- and loses the members its TTLs forgot (once a call per template: the
-- limits a batch makes share one mx).
local function enter_made(L, mx)
  local mk = P .. 'm:' .. L.tp
  redis.call('ZADD', mk, mx, L.key)
  local t = TPL[L.tp]
  if t and (t.noted_mx or 0) >= mx then return end
  if t then
    if not t.noted_mx then redis.call('ZREMRANGEBYSCORE', mk, '-inf', NOW) end
    t.noted_mx = mx
  end
  extend_ttl(mk, mx - NOW + 1000)
end

-- mx for a limit whose keys live want ms from now: a margin past it (up to
-- MX_MARGIN_MS), so that a limit in use moves in m:T once in a while, not
-- on every call, and m:T outlives its last limit by that margin at most.
local MX_MARGIN_MS = 5000
local function mx_for(want) return NOW + want + math.min(want, MX_MARGIN_MS) end

local function note_made(L, mx)
  enter_made(L, mx)
  redis.call('HSET', L.lk, 'mx', fmt(mx))
  L.mx = mx
end

-- common.lua's made_follow: L (loaded, purged, made from a template) as
-- its template says now; nil if the template was deleted (L dropped). One
-- that holds nothing is forgotten here, and read as made afresh (what it
-- counted, its overage totals, goes with it), so that whatever touches it
-- first sees what a later touch would.
made_follow = function(L)
  local t = template(L.tp)
  if not t or t.tg ~= L.tg then
    drop_made(L)
    return nil
  end
  local T = TEMPLATES[L.key]
  if T and T ~= L.tp and precedes(T, L.tp) then
    local u = template(T)
    if u then -- a more specific template, put since L was made: L follows it
      redis.call('ZREM', P .. 'm:' .. L.tp, L.key)
      L.tp, L.tg, t = T, u.tg, u
      L.tv = -1
      redis.call('HSET', L.lk, 'tp', T, 'tg', fmt(u.tg))
      local ttl = redis.call('PTTL', L.lk)
      if ttl > 0 then note_made(L, mx_for(ttl)) end
    end
  end
  if L.act == 0 and L.used == 0 then
    drop_made(L)
    redis.call('ZREM', P .. 'm:' .. L.tp, L.key)
    return fresh(L.key, L.tp)
  end
  if t.v == L.tv then return L end
  -- a budget's new calendar needs the bounds the daemon passes with
  -- reserves and usage reads: until one comes, L stays as it was
  if t.kind == 'b' and (L.kind ~= 'b' or L.cal ~= t.cal) and not (BOUNDS[L.key] and BOUNDS[L.key][1] == t.cal) then
    return L
  end
  if redefine(L, t.kind, t.cap, t.win, t.ovg, t.cal, 0, 0, 0) == 2 then return L end -- in use: later
  L.tv = t.v
  redis.call('HSET', L.lk, 'kind', t.kind, 'win', fmt(t.win), 'ovg', t.ovg, 'tv', fmt(t.v))
  if t.kind == 'b' then redis.call('HSET', L.lk, 'cal', t.cal) end
  return L
end

-- Writes made limit L, new (L.virtual) and holding what this call gave it
-- (new entries in its bucket of now, or a budget's reservations), in as
-- few commands as a limit can be: one HSET of everything, the TTLs set
-- outright (its keys are new), its place in m:T.
local function write_new(L)
  made_incarnate(L)
  flush_adds(L)
  local want = (L.last_at > 0 and L.last_at or L.at) - NOW + 1000
  local mx = mx_for(want)
  -- (pend, debt and denied left out while 0, as load() reads them: a new
  -- limit's HSET is most of what making one costs)
  local fields = {'kind', L.kind, 'win', fmt(L.win), 'ovg', L.ovg, 'tp', L.tp, 'tv', fmt(L.tv), 'tg', fmt(L.tg),
                  'gen', fmt(L.gen), 'mx', fmt(mx), 'enf', fmt(L.enf), 'used', fmt(L.used), 'act', L.act}
  for _, f in ipairs({'pend', 'debt', 'denied'}) do
    if L[f] ~= 0 then fields[#fields + 1] = f; fields[#fields + 1] = fmt(L[f]) end
  end
  local keep = want
  if L.kind == 'b' then
    for _, v in ipairs({'cal', L.cal, 'ps', fmt(L.ps), 'pe', fmt(L.pe), 'com', fmt(L.com)}) do fields[#fields + 1] = v end
    redis.call('PEXPIRE', L.bk, want)
    redis.call('PEXPIRE', L.rk, want)
    if L.com > 0 and L.pe > UNIX_NOW then keep = math.max(want, L.pe - UNIX_NOW + 1000) end
  else
    redis.call('PEXPIRE', L.ek, want)
    redis.call('PEXPIRE', L.ak, want)
  end
  redis.call('HSET', L.lk, unpack(fields))
  redis.call('PEXPIRE', L.lk, keep)
  enter_made(L, math.max(mx, mx_for(keep)))
  L.virtual, L.dirty, L.changes, L.last_at, L.mx = false, false, nil, 0, mx
end

-- common.lua's made_save: false when save() has nothing more to do for
-- made limit L: it holds nothing (a limit not yet written stays unwritten,
-- one in Redis is forgotten now), or it is new and now written whole.
made_save = function(L)
  if L.act == 0 and L.used == 0 then
    if not L.virtual then
      drop_made(L)
      redis.call('ZREM', P .. 'm:' .. L.tp, L.key)
    end
    return false
  end
  if L.virtual then
    write_new(L)
    return false
  end
  return true
end

-- common.lua's made_kept: the TTLs of made limit L (written, holding
-- something) cover what it holds, and its score in m:T covers them. Only
-- extended: a TTL never shrinks below what an earlier call needed.
made_kept = function(L)
  local want = 0
  if L.last_at > 0 then want = L.last_at - NOW + 1000 end
  if L.kind == 'b' then
    if want > 0 then extend_ttl(L.bk, want); extend_ttl(L.rk, want) end
    if L.com > 0 and L.pe > UNIX_NOW then want = math.max(want, L.pe - UNIX_NOW + 1000) end
  end
  if want <= 0 then return end
  extend_ttl(L.lk, want)
  if NOW + want > L.mx then note_made(L, mx_for(want)) end
end

-- Made limit L (loaded) becomes its key's own (define.lua): no template,
-- no TTLs (e:K and a:K keep theirs, as any limit's), out of m:T.
local function made_own(L)
  redis.call('HDEL', L.lk, 'tp', 'tv', 'tg', 'mx')
  redis.call('ZREM', P .. 'm:' .. L.tp, L.key)
  redis.call('PERSIST', L.lk)
  redis.call('PERSIST', L.bk)
  redis.call('PERSIST', L.rk)
  L.tp = nil
end
