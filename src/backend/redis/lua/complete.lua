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
  local v = redis.call('HMGET', lease, 'a', 'c', 'n')
  if v[1] ~= '1' or v[2] == '1' then return end
  local done = {'c', 1}
  local entries = {} -- K -> {kind when reserved, amount, index}
  for i = 1, tonumber(v[3]) do
    local e = redis.call('HMGET', lease, 'k' .. i, 't' .. i, 'm' .. i)
    local L = limit(e[1])
    if L then
      local amount = tonumber(e[3])
      entries[e[1]] = {e[2], amount, i}
      if e[2] == 'c' then release(L, id, amount) end
    end
  end
  for i = 1, #keys do
    local e = entries[keys[i]]
    if e and e[1] == 'r' then
      local amount = reconcile(limits[keys[i]], id, e[2], actuals[i])
      done[#done + 1] = 'm' .. e[3]; done[#done + 1] = fmt(amount)
    end
  end
  redis.call('HSET', lease, unpack(done))
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
