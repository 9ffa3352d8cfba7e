-- allot.lua: allotments of rolling and concurrency limits (docs/allotments.md):
-- capacity set aside for one daemon, which it admits from without a script
-- call. An allotment is an entry of the limit like any reservation: a
-- bucket X = E + the limit's window (or hold timeout), counted in `used`
-- until then, so that Redis's figure is never below what the daemon may
-- hold live from it (a reservation made from it at t <= E lives until
-- t + window <= X). The daemon's record of it, P..'A:'..D..':'..K for daemon
-- D: "generation amount X E", with a TTL past X; and P..'H:'..K, a hash of
-- the daemons holding an allotment of K -> "X amount live entries E" (what
-- the daemon said it held live from it at its last call, and in how many
-- entries), for what a limit's reservations really hold (common.lua's
-- allotments_of) and, while E is to come, for the share rule.
--
-- ARGV[5] = the daemon's id, ARGV[6] = the number of operations, then per
-- operation: key, op, generation, the version of K's definition the daemon
-- knows (0: none), the incarnation of K's limit the daemon's mirror was made
-- for ('': it has no mirror), then
--   'carve':  want, floor, duration_ms, least, live, entries. Sets the allotment
--             to min(want, what it holds + its share of what nobody holds)
--             but never less than floor (what the daemon may hold live from
--             the allotment it has: a refill may shrink it down to that,
--             never below), until E = NOW + duration_ms; a growth that would
--             leave less than least of room above floor is not made (an
--             allotment too small to be worth holding: the daemon decides
--             that key synchronously). live, entries: what the daemon holds
--             live from it now, in how many entries. The share: what no
--             allotment or reservation holds of the capacity in force (the
--             one a decrease goes to, while one is pending), divided by
--             twice the number of daemons holding an allotment of K, this
--             one included: no daemon takes more than half of what is left
--             divided among those holding, so the last units are not held
--             by one while another needs them.
--   'return': n, then n pairs (remaining_ms, amount): what the daemon still
--             holds live from the allotment, by expiry (NOW + remaining_ms,
--             no later than its bucket). Those become entries of the limit
--             of their own; the rest is free at once.
-- generation is the daemon's count of operations on its allotment of that
-- key: equal to the record's is a retry (the record's state is answered,
-- nothing changes); an older one is refused (a call that arrives late must
-- not undo a newer one); a carve must be exactly one more while an
-- allotment is held; anything later applies ('generation' otherwise: the
-- daemon takes the record's generation from the answer and goes on).
--
-- The incarnation (common.lua's gen) ties a daemon's mirror to the limit
-- its allotments were carved from. A mirror of another incarnation than
-- K's now is of a limit deleted since (its allotments went with it,
-- delete.lua): what it holds belongs to no limit in the store, so neither
-- its floor nor what a return says is live may be counted in K's, which
-- starts empty. Such an operation changes nothing and is answered
-- 'incarnation' with K's definition: the daemon drops that mirror with all
-- it holds and mirrors K anew.
--
-- Returns 10 values per operation: status ('ok' | 'unknown' | 'kind' |
-- 'generation' | 'incarnation'), the amount held now, E and X as ms from
-- now, the share the daemon could grow by now, the capacity enforced, the
-- record's generation, the version of K's definition, the incarnation of
-- K's limit (0 if none), and K's definition (JSON) when the version is not
-- the one the daemon knows, or it knows none, or the status is
-- 'incarnation' ('' otherwise).

local daemon = ARGV[5]

-- The allotment's record: generation, amount, X, E (zeros if none).
local function read_allotment(ak)
  local text = redis.call('GET', ak)
  if not text then return 0, 0, 0, 0 end
  local g, a, x, e = string.match(text, '^(%d+) (%d+) (%d+) (%d+)$')
  return tonumber(g), tonumber(a), tonumber(x), tonumber(e)
end

-- How many other daemons admit from an allotment of L now (those whose
-- allotment's counting ended are dropped; one that only drains what it
-- holds live takes no share).
local function others_holding(L)
  local hk = P .. 'H:' .. L.key
  local all = redis.call('HGETALL', hk)
  local others, ended = 0, {}
  for i = 1, #all, 2 do
    local x, e = string.match(all[i + 1], '^(%d+) %d+ %d+ %d+ (%d+)$')
    if tonumber(x) <= NOW then ended[#ended + 1] = all[i]
    elseif all[i] ~= daemon and tonumber(e) > NOW then others = others + 1 end
  end
  if #ended > 0 then redis.call('HDEL', hk, unpack(ended)) end
  return others
end

-- This daemon's entry in L's holders: counted until X while it holds any.
local function note_holder(L, held, X, live, entries, E)
  local hk = P .. 'H:' .. L.key
  if held > 0 then
    redis.call('HSET', hk, daemon, fmt(X) .. ' ' .. fmt(held) .. ' ' .. fmt(math.min(live, held)) .. ' ' .. fmt(entries)
                                    .. ' ' .. fmt(E))
    extend_ttl(hk, X - NOW + 1000)
  else
    redis.call('HDEL', hk, daemon)
  end
end

-- What this daemon may grow its allotment of L by now (see 'carve').
local function share_of(L, others)
  local cap = L.pend ~= 0 and L.pend or L.enf
  local pool = cap - L.used
  if pool <= 0 then return 0 end
  return math.floor(pool / (2 * (others + 1)))
end

local out = {}
local at = 7
for _ = 1, tonumber(ARGV[6]) do
  local K, op, gen, known = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])
  local mirror_of = tonumber(ARGV[at + 4]) -- nil: no mirror
  at = at + 5
  local want, floor, duration, least, held_live, held_entries, live = 0, 0, 0, 0, 0, 0, {}
  if op == 'carve' then
    want, floor, duration = tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
    least, held_live, held_entries = tonumber(ARGV[at + 3]), tonumber(ARGV[at + 4]), tonumber(ARGV[at + 5])
    at = at + 6
  else
    local n = tonumber(ARGV[at])
    for i = 1, n do live[i] = {tonumber(ARGV[at + 2 * i - 1]), tonumber(ARGV[at + 2 * i])} end
    at = at + 1 + 2 * n
  end
  local L = limit(K)
  local ak = P .. 'A:' .. daemon .. ':' .. K
  local g, held, X, E = read_allotment(ak)
  -- An allotment whose bucket expired was purged with it: nothing is held.
  if g > 0 and X <= NOW then held = 0 end
  local status, others = 'ok', 0
  if L == nil then
    status = 'unknown'
  elseif mirror_of ~= nil and mirror_of ~= L.gen then
    status = 'incarnation' -- its mirror is of a limit deleted since: nothing of it counts here
  elseif (L.kind ~= 'r' and L.kind ~= 'c') or L.tp then
    status = 'kind' -- a made limit (made.lua) is decided by Redis too: docs/allotments.md
  else
    others = others_holding(L)
    if g > 0 and gen == g then
      -- a retry: the record says what the first call did
    elseif gen < g or (op == 'carve' and held > 0 and gen ~= g + 1) then
      status = 'generation' -- late, or out of step with a live allotment
    elseif op == 'carve' then
      local grant = math.min(want, held + share_of(L, others))
      if grant > held and grant < floor + least then grant = held end -- a growth not worth having
      if grant < floor then grant = floor end
      local E_new = NOW + duration
      local X_new = X
      -- a drain (duration 0) admits nothing more: what it holds lives no
      -- later than the X it has
      if grant > 0 and (duration > 0 or X <= NOW) then X_new = math.max(E_new + L.win, X) end
      if held > 0 then change_bucket(L, X, -held, -1) end
      if grant > 0 then add_entry(L, X_new, grant) end
      held, X, E, g = grant, X_new, E_new, gen
      local ttl = held > 0 and X - NOW + 1000 or 60000
      redis.call('SET', ak, string.format('%.0f %.0f %.0f %.0f', g, held, X, E), 'PX', fmt(ttl))
      note_holder(L, held, X, held_live, held_entries, E)
    else -- 'return'
      if held > 0 then change_bucket(L, X, -held, -1) end
      for _, entry in ipairs(live) do
        local x = math.min(NOW + entry[1], X)
        if x > NOW and entry[2] > 0 then add_entry(L, x, entry[2]) end
      end
      held, E, g = 0, NOW, gen
      -- Kept (with nothing held) so that a retry of this return is known.
      redis.call('SET', ak, string.format('%.0f 0 %.0f %.0f', g, X, E), 'PX', 60000)
      note_holder(L, 0, X, 0, 0, E)
    end
  end
  local cap, share = 0, 0
  if L ~= nil then
    try_decrease(L)
    save(L)
    cap = L.enf
    if status ~= 'kind' then share = share_of(L, others) end
  end
  local version = tonumber(redis.call('ZSCORE', P .. 'defs:changed', K)) or 0
  local definition = ''
  if L ~= nil and (version ~= known or known == 0 or status == 'incarnation') then
    definition = redis.call('HGET', L.lk, 'def') or ''
  end
  out[#out + 1] = status
  out[#out + 1] = fmt(held)
  out[#out + 1] = fmt(math.max(0, E - NOW))
  out[#out + 1] = fmt(math.max(0, X - NOW))
  out[#out + 1] = fmt(share)
  out[#out + 1] = fmt(cap)
  out[#out + 1] = fmt(g)
  out[#out + 1] = fmt(version)
  out[#out + 1] = fmt(L ~= nil and L.gen or 0)
  out[#out + 1] = definition
end
return out
