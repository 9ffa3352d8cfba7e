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

-- Scratch space reused by every lease of the call: a script's time per lease
-- goes largely to making tables, so the hot path makes only one.
local lims, amounts = {}, {}

-- Remembers a denial (its lease record, see lease_encode) and returns it.
local function deny(lease, ra, s, sk)
  local record = table.concat({'0', fmt(ra), '0', s, '=' .. sk, '0', forget_text(0), 0}, ' ')
  redis.call('SET', lease, record, 'PX', memory_ms)
  return 0, ra, 0, s, sk
end

-- Decides the lease whose id, count and (key, amount) pairs start at
-- ARGV[base]. exceeds_capacity beats limit_decreasing beats a plain deny: a
-- client must not retry what can never fit.
local function reserve(base)
  local id, n = ARGV[base], tonumber(ARGV[base + 1])
  local lease = P .. 'L:' .. id
  local known = redis.call('GET', lease)
  if known then
    -- remembered until f on the backend's clock (the key's TTL runs on
    -- Redis's own clock, which a test's manual clock does not move)
    local first = lease_decode(known)
    if first.f >= NOW then return first.a, first.ra, first.at, first.s, first.sk end
  end
  local lifetime = 0
  for i = 1, n do
    local K = ARGV[base + 2 * i]
    local lim = limit(K)
    if lim == nil then return 0, 0, 0, ST_UNKNOWN, K end -- not remembered
    lims[i] = lim
    amounts[i] = tonumber(ARGV[base + 2 * i + 1])
    if lim.win > lifetime then lifetime = lim.win end
  end
  local decreasing, fits, wait = nil, true, 0
  for i = 1, n do
    local lim, amount = lims[i], amounts[i]
    if amount > lim.enf then return deny(lease, 0, ST_EXCEEDS, lim.key) end
    if lim.pend ~= 0 then
      if decreasing == nil then decreasing = lim.key end
    elseif lim.used + amount > lim.enf then
      fits = false
      local w = retry_after(lim, amount)
      if w > wait then wait = w end
    end
  end
  if decreasing then return deny(lease, 10000, ST_DECREASING, decreasing) end
  if not fits then return deny(lease, wait, ST_OK, '') end
  local parts = {'1', '0', UNIX_NOW_TEXT, '0', '=', '0', forget_text(lifetime), n}
  for i = 1, n do
    local lim, amount_text = lims[i], ARGV[base + 2 * i + 1]
    hold(lim, id, amounts[i], amount_text, NOW + lim.win)
    parts[#parts + 1] = lim.key; parts[#parts + 1] = lim.kind; parts[#parts + 1] = amount_text
  end
  redis.call('SET', lease, table.concat(parts, ' '), 'PX', lifetime + memory_ms)
  return 1, 0, UNIX_NOW, ST_OK, ''
end

local out = {}
local at = 6
for _ = 1, tonumber(ARGV[5]) do
  local o = #out
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = reserve(at)
  at = at + 2 + 2 * tonumber(ARGV[at + 1])
end
for _, L in pairs(limits) do save(L) end
return out
