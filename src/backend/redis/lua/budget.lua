-- budget.lua: limits of kind budget (b), spend over a calendar period; the
-- prelude after audit.lua. The same rules as the memory backend's
-- (memory/limit.c): a reserve holds its amount in the period it was made
-- in, until Complete charges the actual to that period (nothing now if it
-- has ended) and refunds the rest, or its timeout refunds it in full; the
-- period's charges are 0 again at its end.
--
-- A budget's open reservations, one by one (each is refunded and audited
-- on its own): P..'b:'..K, a zset of lease ids by timeout X (ms, on NOW's
-- clock), and P..'r:'..K, a hash of lease id -> "amount period_start job",
-- the job id last (it may hold spaces). No TTL: they leave when refunded,
-- which a sweep does within a second of their timeout.
--
-- Lua in Redis knows no time zones, so the daemon computes a budget's
-- periods from its definition (core/calendar.h) and passes, per budget,
-- six values: K, then cal (its period and zone, "month UTC", as l:K's
-- 'cal'), the start of the period before the one holding the daemon's now,
-- that one's start and end, and the next one's end. The script takes the
-- period holding Redis's now, since the two clocks may differ near a
-- boundary; if none does they differ by more than a period, and the call
-- fails before it writes anything, saying so. Bounds of another calendar
-- than l:K's are none: that daemon has not read the latest definition.
-- Scripts that start periods (reserve, define, usage) need the bounds;
-- complete and sweep do without: a budget whose period has ended but not
-- been rolled yet counts nothing of it now, and the next script with bounds
-- rolls it.

local BOUNDS = {} -- K -> {cal, b0, b1, b2, b3}

-- Takes K's bounds from ARGV[at..at+4] (cal, b0..b3), refusing the call
-- when Redis's now lies outside them.
local function take_bounds(K, at)
  local b = {ARGV[at], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3]),
             tonumber(ARGV[at + 4])}
  if UNIX_NOW < b[2] or UNIX_NOW >= b[5] then
    error({err = 'budget ' .. K .. ': the time of Redis, ' .. fmt(UNIX_NOW) .. ' Unix ms, is outside the periods '
                 .. 'the daemon computed from its own clock, [' .. fmt(b[2]) .. ', ' .. fmt(b[5]) .. '): the two '
                 .. 'clocks differ by more than a period; synchronize them (NTP)'})
  end
  BOUNDS[K] = b
end

-- ARGV[at] = n, then n times K and its bounds. Returns the index after them.
local function read_bounds(at)
  local n = tonumber(ARGV[at])
  for i = 0, n - 1 do take_bounds(ARGV[at + 1 + 6 * i], at + 2 + 6 * i) end
  return at + 1 + 6 * n
end

-- L's bounds, if the daemon passed them for L's own calendar.
local function bounds_of(L)
  local b = BOUNDS[L.key]
  if b and b[1] == L.cal then return b end
  return nil
end

-- The period of bounds b that holds Redis's now: start, end.
local function period_now(b)
  for i = 2, 4 do
    if UNIX_NOW < b[i + 1] then return b[i], b[i + 1] end
  end
end

-- An open reservation's value in r:K: amount, period start, job id.
local function reservation(text)
  local amount, ps, job = string.match(text, '^(%d+) (%d+) (.*)$')
  return tonumber(amount), tonumber(ps), job
end

local function reservation_text(amount, ps, job) return fmt(amount) .. ' ' .. fmt(ps) .. ' ' .. job end

-- The lease ids of a ZRANGE ... WITHSCORES answer on b:K, their timeouts,
-- and their values in r:K.
local function reservations_in(L, scored)
  local ids, timeouts = {}, {}
  for i = 1, #scored / 2 do ids[i] = scored[2 * i - 1]; timeouts[i] = tonumber(scored[2 * i]) end
  if #ids == 0 then return ids, timeouts, {} end
  return ids, timeouts, redis.call('HMGET', L.rk, unpack(ids))
end

-- Refunds every reservation of L whose timeout has passed, oldest first,
-- each audited as expired at its timeout.
local function refund_due(L)
  while true do
    local ids, timeouts, values =
      reservations_in(L, redis.call('ZRANGEBYSCORE', L.bk, '-inf', NOW, 'WITHSCORES', 'LIMIT', 0, CHUNK))
    local k = #ids
    if k == 0 then break end
    for i = 1, k do
      if values[i] then
        local amount, ps, job = reservation(values[i])
        if ps == L.ps then L.used = L.used - amount end
        audit(L, timeouts[i] - NOW + UNIX_NOW, ids[i], job, amount, 0, ps, true)
      end
    end
    redis.call('HDEL', L.rk, unpack(ids))
    redis.call('ZREM', L.bk, unpack(ids))
    L.act = L.act - k; L.dirty = true
    if k < CHUNK then break end
  end
end

-- common.lua's budget_purge: refunds what is due, then, with bounds, starts
-- the period holding now once L's has ended: nothing charged and nothing
-- held in it (open reservations belong to the one before).
budget_purge = function(L)
  refund_due(L)
  local b = bounds_of(L)
  if b == nil or UNIX_NOW < L.pe then return end
  L.ps, L.pe = period_now(b)
  L.com, L.used, L.dirty = 0, 0, true
end

-- Holds amount for lease id in L's current period until NOW + its timeout.
local function budget_hold(L, id, amount, job)
  amount = counter_fit(L.used, amount) -- all of it: it was admitted
  redis.call('ZADD', L.bk, L.at, id)
  redis.call('HSET', L.rk, id, reservation_text(amount, L.ps, job))
  L.used = L.used + amount; L.act = L.act + 1; L.dirty = true
  if L.at > L.last_at then L.last_at = L.at end -- a made budget's TTL covers it (made.lua)
end

-- Complete of lease id on L with actual (nil: the Complete named none for
-- L, so what it reserved): its open reservation is released and the actual
-- charged to the period it was made in, under L's overage policy (debt: all
-- of it; deny: what fits, at least what it reserved, the rest counted); a
-- period that has ended is charged nothing now. Audited. A reservation
-- its timeout refunded (and audited) is charged nothing: no entry.
local function budget_charge(L, id, actual)
  local text = redis.call('HGET', L.rk, id)
  if not text then return end
  local reserved, ps, job = reservation(text)
  redis.call('ZREM', L.bk, id)
  redis.call('HDEL', L.rk, id)
  L.act = L.act - 1; L.dirty = true
  if actual == nil then actual = reserved end
  if ps == L.ps and UNIX_NOW < L.pe then
    L.used = L.used - reserved
    local charged = actual
    if actual > reserved then -- overage (docs/concepts.md), as for rolling limits
      if L.ovg == 'debt' then
        L.debt = counter_add(L.debt, counter_above(L.used + reserved, actual - reserved, L.enf))
      else
        charged = math.min(actual, math.max(L.enf - L.used, reserved))
        L.denied = counter_add(L.denied, actual - charged)
      end
    end
    charged = counter_fit(L.used, charged) -- com is part of used: what fits fits both
    L.com = L.com + charged; L.used = L.used + charged
  end
  audit(L, UNIX_NOW, id, job, reserved, actual, ps, false)
end

-- Milliseconds until amount more would fit on L: the soonest timeout of
-- this period's open reservations that makes room, else the period's end
-- (what is committed leaves only with it); at least 1.
local function budget_retry_after(L, amount)
  local need = (L.used - L.enf) + amount -- exact: at most L.used, as amount <= L.enf
  if need <= L.used - L.com then
    local offset, chunk = 0, 8
    while true do
      local _, timeouts, values = reservations_in(L, redis.call('ZRANGE', L.bk, offset, offset + chunk - 1, 'WITHSCORES'))
      local k = #timeouts
      if k == 0 then break end
      for i = 1, k do
        if values[i] then
          local a, ps = reservation(values[i])
          if ps == L.ps then
            if a >= need then return math.max(timeouts[i] - NOW, 1) end
            need = need - a
          end
        end
      end
      if k < chunk then break end
      offset = offset + chunk
      if chunk < CHUNK then chunk = chunk * 2 end
    end
  end
  return math.max(L.pe - UNIX_NOW, 1)
end

-- A new calendar for L (a budget now, or another period or zone), with its
-- bounds taken: the period holding now is its. What L counted goes on
-- counting there (a change never hands out a fresh budget), its open
-- reservations moved along, unless L's own period had already ended.
budget_enter = function(L, cal) -- common.lua's
  local s, e = period_now(BOUNDS[L.key])
  if L.kind ~= 'b' then
    L.com, L.used = 0, 0 -- a limit changes kind only while it holds nothing
  elseif UNIX_NOW >= L.pe then
    L.com, L.used = 0, 0
  elseif s ~= L.ps then
    local all = redis.call('HGETALL', L.rk)
    for i = 1, #all, 2 do
      local amount, ps, job = reservation(all[i + 1])
      if ps == L.ps then redis.call('HSET', L.rk, all[i], reservation_text(amount, s, job)) end
    end
  end
  L.ps, L.pe, L.cal, L.kind, L.dirty = s, e, cal, 'b', true
end

-- L stops being a budget (it holds no reservation): what it charged is not
-- a rolling or concurrency use.
budget_leave = function(L) -- common.lua's
  redis.call('HDEL', L.lk, 'cal', 'ps', 'pe', 'com')
  L.com, L.used, L.dirty = 0, 0, true
end
