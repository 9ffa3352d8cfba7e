-- complete.lua: completes a batch of leases. ARGV[4] = count, then per
-- lease: id, n, and n pairs (key, actual_amount). Releases holds, shrinks a
-- rolling reservation to its actual amount for the rest of its window, and
-- charges overage per the limit's policy. Unknown, denied or already
-- completed leases change nothing. Returns nothing useful (always ok).
local function overage(L, id, reserved, extra)
  if L.ovg == 'debt' then
    local before = math.max(0, L.used - L.enf)
    L.used = L.used + extra
    L.debt = L.debt + (math.max(0, L.used - L.enf) - before)
    redis.call('HSET', L.ak, id, fmt(reserved + extra))
  else
    local room = math.max(0, L.enf - L.used)
    local charged = math.min(extra, room)
    L.used = L.used + charged
    L.denied = L.denied + (extra - charged)
    redis.call('HSET', L.ak, id, fmt(reserved + charged))
  end
  L.dirty = true
end

local function reconcile(L, id, actual)
  if redis.call('ZSCORE', L.ek, id) == false then return end -- its window is over
  local reserved = tonumber(redis.call('HGET', L.ak, id))
  if actual == 0 then
    release(L, id)
  elseif actual < reserved then
    redis.call('HSET', L.ak, id, fmt(actual))
    L.used = L.used - (reserved - actual); L.dirty = true
  elseif actual > reserved then
    overage(L, id, reserved, actual - reserved)
  end
end

local function complete(id, keys, actuals)
  local lease = P .. 'L:' .. id
  local v = redis.call('HMGET', lease, 'a', 'c', 'n')
  if v[1] ~= '1' or v[2] == '1' then return end
  redis.call('HSET', lease, 'c', 1)
  local entries = {} -- K -> kind when reserved
  for i = 1, tonumber(v[3]) do
    local e = redis.call('HMGET', lease, 'k' .. i, 't' .. i)
    local L = limit(e[1])
    if L then
      entries[e[1]] = e[2]
      if e[2] == 'c' then release(L, id) end
    end
  end
  for i = 1, #keys do
    if entries[keys[i]] == 'r' then reconcile(limits[keys[i]], id, actuals[i]) end
  end
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
