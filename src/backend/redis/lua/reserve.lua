-- reserve.lua: decides a batch of leases, each all-or-nothing, in order.
-- ARGV[4] = lease memory ms, ARGV[5] = count, then per lease: id, n, and n
-- pairs (key, amount). Returns 5 values per lease: allowed (0|1),
-- retry_after_ms, reserved_at_unix_ms, status, the key the status names ('').
local memory_ms = tonumber(ARGV[4])
-- Milliseconds until `amount` more would fit, walking expiries in order:
-- usually the first few free enough, so fetch few, then more.
local function retry_after(L, amount)
  local need = L.used + amount - L.enf
  local offset, chunk = 0, 8
  while true do
    local batch = redis.call('ZRANGE', L.ek, offset, offset + chunk - 1, 'WITHSCORES')
    if #batch == 0 then break end
    for i = 1, #batch, 2 do
      local a = amount_of(batch[i])
      if a >= need then
        local at = tonumber(batch[i + 1])
        if at > NOW then return at - NOW end
        return 1
      end
      need = need - a
    end
    offset = offset + chunk
    if chunk < CHUNK then chunk = chunk * 2 end
  end
  -- then the entries this call added (not written yet), in the order made
  for i = 1, #L.adds, 2 do
    local a = amount_of(L.adds[i + 1])
    if a >= need then return math.max(1, L.adds[i] - NOW) end
    need = need - a
  end
  return 1
end

-- exceeds_capacity beats limit_decreasing beats a plain deny: a client must
-- not retry what can never fit.
local function decide(keys, amounts, L)
  local decreasing, fits, wait = nil, true, 0
  for i = 1, #keys do
    local lim = L[i]
    if amounts[i] > lim.enf then return {0, 0, 0, ST_EXCEEDS, lim.key} end
    if lim.pend ~= 0 then
      if decreasing == nil then decreasing = lim.key end
    elseif lim.used + amounts[i] > lim.enf then
      fits = false
      local w = retry_after(lim, amounts[i])
      if w > wait then wait = w end
    end
  end
  if decreasing then return {0, 10000, 0, ST_DECREASING, decreasing} end
  if not fits then return {0, wait, 0, ST_OK, ''} end
  return {1, 0, UNIX_NOW, ST_OK, ''}
end

-- Texts formatted once per call, shared by its leases.
local UNIX_NOW_TEXT = fmt(UNIX_NOW)
local forget_texts = {} -- lifetime ms -> text of NOW + lifetime + lease memory

local function forget_text(lifetime_ms)
  local text = forget_texts[lifetime_ms]
  if text == nil then
    text = fmt(NOW + lifetime_ms + memory_ms)
    forget_texts[lifetime_ms] = text
  end
  return text
end

local function reserve(id, keys, amounts, amount_texts)
  local lease = P .. 'L:' .. id
  local known = redis.call('GET', lease)
  if known then
    -- remembered until f on the backend's clock (the key's TTL runs on
    -- Redis's own clock, which a test's manual clock does not move)
    local first = lease_decode(known)
    if first.f >= NOW then return {first.a, first.ra, first.at, first.s, first.sk} end
  end
  local L = {}
  local lifetime = 0
  for i = 1, #keys do
    local lim = limit(keys[i])
    if lim == nil then return {0, 0, 0, ST_UNKNOWN, keys[i]} end -- not remembered
    L[i] = lim
    if lim.win > lifetime then lifetime = lim.win end
  end
  local r = decide(keys, amounts, L)
  local record = {a = r[1], ra = r[2], at = r[3], s = r[4], sk = r[5], c = 0, entries = {}}
  if r[1] == 1 then
    record.ra_text = '0'; record.at_text = UNIX_NOW_TEXT
    for i = 1, #keys do
      local lim = L[i]
      hold(lim, id, amounts[i], amount_texts[i], NOW + lim.win)
      record.entries[i] = {key = lim.key, kind = lim.kind, amount = amounts[i], amount_text = amount_texts[i]}
    end
  else
    lifetime = 0
  end
  record.f_text = forget_text(lifetime)
  record.f = NOW + lifetime + memory_ms
  redis.call('SET', lease, lease_encode(record), 'PX', lifetime + memory_ms)
  return r
end

local out = {}
local at = 6
for _ = 1, tonumber(ARGV[5]) do
  local id, n = ARGV[at], tonumber(ARGV[at + 1])
  local keys, amounts, amount_texts = {}, {}, {}
  for i = 1, n do
    keys[i] = ARGV[at + 2 * i]
    amount_texts[i] = ARGV[at + 2 * i + 1]
    amounts[i] = tonumber(amount_texts[i])
  end
  at = at + 2 + 2 * n
  local r = reserve(id, keys, amounts, amount_texts)
  for i = 1, 5 do out[#out + 1] = r[i] end
end
for _, L in pairs(limits) do save(L) end
return out
