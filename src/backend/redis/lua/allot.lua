-- allot.lua: allotments of rolling and concurrency limits (docs/allotments.md):
-- capacity set aside for one daemon, which it admits from without a script
-- call. An allotment is an entry of the limit like any reservation: a
-- bucket X = E + the limit's window (or hold timeout), counted in `used`
-- until then, so that Redis's figure is never below what the daemon may
-- hold live from it (a reservation made from it at t <= E lives until
-- t + window <= X). The daemon's record of it, P..'A:'..D..':'..K for daemon
-- D: "generation amount X E", with a TTL past X.
--
-- ARGV[5] = the daemon's id, ARGV[6] = the number of operations, then per
-- operation: key, op, generation, then
--   'carve':  want, floor, duration_ms. Sets aside min(want, what is free)
--             but never less than floor (what the daemon holds live from
--             the allotment it has, if any: a refill may shrink it down to
--             that, never below), until E = NOW + duration_ms. An allotment
--             the daemon holds is replaced (a refill).
--   'return': n, then n pairs (remaining_ms, amount): what the daemon still
--             holds live from the allotment, by expiry (NOW + remaining_ms,
--             no later than its bucket). Those become entries of the limit
--             of their own; the rest is free at once.
-- generation is the daemon's count of operations on its allotment of that
-- key: equal to the record's is a retry (the record's state is answered,
-- nothing changes); 1 more applies; any later one applies too once nothing
-- is held (the allotment ended, or there is none); anything else is
-- refused for a carve ('generation': the daemon lost track of a live
-- allotment and must return it, which any later generation may, and carve
-- again).
--
-- Returns 6 values per operation: status ('ok' | 'unknown' | 'kind' |
-- 'generation'), the amount held now, E and X as ms from now, what is free
-- in the limit after it, and the capacity enforced.

local daemon = ARGV[5]

-- The allotment's record: generation, amount, X, E (zeros if none).
local function read_allotment(ak)
  local text = redis.call('GET', ak)
  if not text then return 0, 0, 0, 0 end
  local g, a, x, e = string.match(text, '^(%d+) (%d+) (%d+) (%d+)$')
  return tonumber(g), tonumber(a), tonumber(x), tonumber(e)
end

-- Moves bucket X of L by amount and count; written by save().
local function change_bucket(L, X, amount_delta, count_delta)
  if L.changes == nil then L.changes = {} end
  local key = fmt(X)
  local d = L.changes[key]
  if d == nil then d = {0, 0}; L.changes[key] = d end
  d[1] = d[1] + amount_delta; d[2] = d[2] + count_delta
  L.used = L.used + amount_delta; L.act = L.act + count_delta; L.dirty = true
end

-- What a new allotment may take now: the capacity in force (the one a
-- decrease goes to, while one is pending) minus what else is used.
local function free_of(L, held)
  local cap = L.pend ~= 0 and L.pend or L.enf
  local others = L.used - held
  if others >= cap then return 0 end
  return cap - others
end

local out = {}
local at = 7
for _ = 1, tonumber(ARGV[6]) do
  local K, op, gen = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2])
  at = at + 3
  local want, floor, duration, live = 0, 0, 0, {}
  if op == 'carve' then
    want, floor, duration = tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
    at = at + 3
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
  local status = 'ok'
  if L == nil then
    status = 'unknown'
  elseif L.kind ~= 'r' and L.kind ~= 'c' then
    status = 'kind'
  elseif g > 0 and gen == g then
    -- a retry: the record says what the first call did
  elseif op == 'carve' and (gen < g or (g > 0 and held > 0 and gen ~= g + 1)) then
    -- out of step with a live allotment (or an old call arriving late)
    status = 'generation'
  elseif op == 'carve' then
    local grant = math.min(want, free_of(L, held))
    if grant < floor then grant = floor end
    local E_new = NOW + duration
    local X_new = math.max(E_new + L.win, X)
    if held > 0 then change_bucket(L, X, -held, -1) end
    if grant > 0 then
      change_bucket(L, X_new, grant, 1)
      redis.call('ZADD', L.ek, 'NX', X_new, fmt(X_new))
    end
    held, X, E = grant, X_new, E_new
    redis.call('SET', ak, string.format('%.0f %.0f %.0f %.0f', gen, held, X, E), 'PX', fmt(X - NOW + 1000))
  else -- 'return'
    if held > 0 then change_bucket(L, X, -held, -1) end
    for _, entry in ipairs(live) do
      local x = math.min(NOW + entry[1], X)
      if x > NOW and entry[2] > 0 then
        change_bucket(L, x, entry[2], 1)
        redis.call('ZADD', L.ek, 'NX', x, fmt(x))
      end
    end
    held, E = 0, NOW
    -- Kept (with nothing held) so that a retry of this return is known.
    redis.call('SET', ak, string.format('%.0f 0 %.0f %.0f', gen, X, E), 'PX', 60000)
  end
  if L ~= nil then
    try_decrease(L)
    save(L)
  end
  local cap = L ~= nil and L.enf or 0
  local free = L ~= nil and math.max(0, cap - L.used) or 0
  out[#out + 1] = status
  out[#out + 1] = fmt(held)
  out[#out + 1] = fmt(math.max(0, E - NOW))
  out[#out + 1] = fmt(math.max(0, X - NOW))
  out[#out + 1] = fmt(free)
  out[#out + 1] = fmt(cap)
end
return out
