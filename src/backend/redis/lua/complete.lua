-- complete.lua: completes a batch of leases. ARGV[4] = count, then per
-- lease: id, n, and n pairs (key, actual_amount). Releases holds, shrinks a
-- rolling reservation to its actual amount for the rest of its window, and
-- charges overage per the limit's policy. Unknown, denied or already
-- completed leases change nothing. Returns nothing useful (always ok).
-- Moves a live entry to a new amount, keeping its expiry.
local function resize(L, id, reserved, amount)
  local old = member(id, reserved)
  local at = redis.call('ZSCORE', L.ek, old)
  redis.call('ZREM', L.ek, old)
  if amount > 0 then redis.call('ZADD', L.ek, at, member(id, amount)) end
  L.used = L.used - reserved + amount; L.dirty = true
end

-- Overage: the call used more than it reserved (DESIGN.md "Overage").
local function overage(L, id, reserved, extra)
  if L.ovg == 'debt' then
    local before = math.max(0, L.used - L.enf)
    resize(L, id, reserved, reserved + extra)
    L.debt = L.debt + (math.max(0, L.used - L.enf) - before)
    return reserved + extra
  end
  local charged = math.min(extra, math.max(0, L.enf - L.used))
  resize(L, id, reserved, reserved + charged)
  L.denied = L.denied + (extra - charged)
  return reserved + charged
end

-- Returns the entry's amount afterwards.
local function reconcile(L, id, reserved, actual)
  if redis.call('ZSCORE', L.ek, member(id, reserved)) == false then return reserved end -- its window is over
  if actual < reserved then
    resize(L, id, reserved, actual)
    return actual
  elseif actual > reserved then
    return overage(L, id, reserved, actual - reserved)
  end
  return reserved
end

local function complete(id, keys, actuals)
  local lease = P .. 'L:' .. id
  local known = redis.call('GET', lease)
  if not known then return end
  local record = lease_decode(known)
  if record.a ~= 1 or record.c == 1 then return end
  record.c = 1
  local entries = {} -- K -> the record's entry
  for _, e in ipairs(record.entries) do
    local L = limit(e.key)
    if L then
      entries[e.key] = e
      if e.kind == 'c' then release(L, id, e.amount) end
    end
  end
  for i = 1, #keys do
    local e = entries[keys[i]]
    if e and e.kind == 'r' then e.amount = reconcile(limits[keys[i]], id, e.amount, actuals[i]) end
  end
  redis.call('SET', lease, lease_encode(record), 'KEEPTTL')
end

local at = 5
for _ = 1, tonumber(ARGV[4]) do
  local id, n = ARGV[at], tonumber(ARGV[at + 1])
  local keys, actuals = {}, {}
  for i = 1, n do
    keys[i] = ARGV[at + 2 * i]
    actuals[i] = tonumber(ARGV[at + 2 * i + 1])
  end
  at = at + 2 + 2 * n
  complete(id, keys, actuals)
end
for _, L in pairs(limits) do try_decrease(L); save(L) end
return 0
