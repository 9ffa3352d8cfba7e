-- reserve.lua: decides a batch of leases, each all-or-nothing, in order.
-- ARGV[5] = lease memory ms, ARGV[6] = the number of budgets whose bounds
-- follow (budget.lua), then their bounds, then the number of keys a
-- template matches and their (key, pattern) pairs (made.lua), then the
-- count of leases, then per
-- lease: id, n, the fingerprint of its requirements, its job id (''), its
-- flags, and n pairs (key, amount). Flags are '' for a plain lease, else a
-- number whose bit 0 says a dry run and bit i that requirement i is
-- optional. Returns 11 values per lease: allowed (0|1),
-- retry_after_ms, reserved_at_unix_ms, status, the key the status names
-- (''), then denied_by: its key (''), reason (1 capacity, 2 decreasing, 3
-- exceeds_capacity), requested, available, capacity, and a budget's
-- period_end_unix_ms (0). A lease that meets a budget without its bounds is
-- answered ST_BOUNDS naming it, and not remembered.
--
-- An optional requirement whose key has no definition is skipped: the lease
-- is decided, recorded and held on the others (on none if all are skipped);
-- its fingerprint is the whole request's. A dry run is answered as the
-- lease would be now and writes nothing of its own: no record, no entry (a
-- lease decided before answers its first outcome); what is due expires as
-- in any call.
--
-- A key a template makes is decided as the limit made from it (made.lua),
-- written only once a lease holds some of it: a dry run, a denial or a
-- lease that holds nothing there leave no limit behind.
local memory_ms = tonumber(ARGV[5])
local leases_at = read_templates(read_bounds(6))

-- Milliseconds until `amount` more would fit, walking the buckets in expiry
-- order: usually the first few free enough, so fetch few, then more.
local function retry_after(L, amount)
  if L.kind == 'b' then return budget_retry_after(L, amount) end
  flush_adds(L) -- so that the walk sees this call's entries in their place
  local need = (L.used - L.enf) + amount -- exact: at most L.used, as amount <= L.enf
  local offset, chunk = 0, 8
  while true do
    local buckets = redis.call('ZRANGE', L.ek, offset, offset + chunk - 1)
    local k = #buckets
    if k == 0 then break end
    local amounts = redis.call('HMGET', L.ak, unpack(buckets))
    for i = 1, k do
      local a = tonumber(amounts[i]) or 0
      if a >= need then
        local at = tonumber(buckets[i])
        if at > NOW then return at - NOW end
        return 1
      end
      need = need - a
    end
    if k < chunk then break end
    offset = offset + chunk
    if chunk < CHUNK then chunk = chunk * 2 end
  end
  return 1
end

-- Texts formatted once per call, shared by its leases.
local UNIX_NOW_TEXT = fmt(UNIX_NOW)
local forget_texts = {} -- lifetime ms -> text of NOW + lifetime + lease memory
local ttl_texts = {}    -- lifetime ms -> text of lifetime + lease memory

local function forget_text(lifetime_ms)
  local text = forget_texts[lifetime_ms]
  if text == nil then
    text = fmt(NOW + lifetime_ms + memory_ms)
    forget_texts[lifetime_ms] = text
    ttl_texts[lifetime_ms] = fmt(lifetime_ms + memory_ms)
  end
  return text
end

-- Records a lease's outcome unless it has one already: SET NX GET, one call
-- for both the idempotency check and the write. Returns the remembered
-- record, or nil when this outcome stands. A lease is remembered until its
-- forget_at on the backend's clock (the key's TTL runs on Redis's own clock,
-- which a test's manual clock does not move).
local function record(lease, text, ttl_ms)
  local known = redis.call('SET', lease, text, 'NX', 'GET', 'PX', ttl_ms)
  if known then
    local _, _, _, _, _, _, f = lease_head(known)
    if f >= NOW then return known end
    redis.call('SET', lease, text, 'PX', ttl_ms)
  end
  return nil
end

-- A lease decided before: its first outcome if this is a retry of the same
-- request (the same fingerprint, or a record from before fingerprints),
-- else a conflict: the caller must not believe it holds what it never
-- reserved. A denial's record keeps its denied_by in a word
-- '!reason:requested:available:capacity:key' (none in records from before),
-- and a budget's period end in a word '@end'.
local function replay(known, fingerprint)
  local words = split_job(known)
  local f = string.match(words, ' #(%S+)$')
  if f and f ~= fingerprint then return 0, 0, 0, ST_CONFLICT, '', '', 0, 0, 0, 0, 0 end
  local a, ra, at, s, sk = lease_head(words)
  local dr, dq, da, dc, dk = string.match(words, ' !(%d+):(%d+):(%d+):(%d+):(%S+)')
  if dk == nil then return a, ra, at, s, sk, '', 0, 0, 0, 0, 0 end
  local pe = tonumber(string.match(words, ' @(%d+)')) or 0
  return a, ra, at, s, sk, dk, tonumber(dr), tonumber(dq), tonumber(da), tonumber(dc), pe
end

-- Denies a lease (remembering the denial, unless a dry run) unless it was decided before:
-- status s naming sk, because limit L had too little room for amount
-- (reason dr, L's capacity cap then). A decision counts allotments in full
-- (what their daemons hold live may have grown since they last said);
-- denied_by's available, as LimitInfo's, counts what they hold live.
local function deny(lease, fingerprint, ra, s, sk, L, dr, amount, cap, dry)
  -- what is free as LimitInfo says it (usage.lua): allotments' unused room
  -- is free, set aside for the daemons that hold it
  local avail = cap - (L.used - allotments_of(L))
  if avail < 0 then avail = 0 end
  local pe = 0
  if L.kind == 'b' then pe = L.pe end
  if dry then return 0, ra, 0, s, sk, L.key, dr, amount, avail, cap, pe end -- nothing remembered
  local word = '!' .. dr .. ':' .. fmt(amount) .. ':' .. fmt(avail) .. ':' .. fmt(cap) .. ':' .. L.key
  local text = table.concat({'0', fmt(ra), '0', s, '=' .. sk, '0', forget_text(0), '0', '@' .. fmt(pe), word,
                             '#' .. fingerprint}, ' ')
  local known = record(lease, text, ttl_texts[0])
  if known then return replay(known, fingerprint) end
  return 0, ra, 0, s, sk, L.key, dr, amount, avail, cap, pe
end

-- A lease that may not be decided now (its key is unknown, or a budget's
-- bounds are missing): status s naming K, not remembered; but a lease
-- decided before keeps its outcome.
local function undecided(lease, fingerprint, s, K)
  local known = redis.call('GET', lease)
  if known then
    local _, _, _, _, _, _, f = lease_head(known)
    if f >= NOW then return replay(known, fingerprint) end
  end
  return 0, 0, 0, s, K, '', 0, 0, 0, 0, 0
end

-- Scratch space reused by every lease of the call: a script's time per lease
-- goes largely to making tables, so the hot path makes only one.
local lims, amounts, amount_texts, gens, parts = {}, {}, {}, {}, {'1', '0', UNIX_NOW_TEXT, '0', '=', '0'}

-- Decides the lease whose id, count, fingerprint, job id, flags and (key,
-- amount) pairs start at ARGV[base]. exceeds_capacity beats
-- limit_decreasing beats a plain deny: a client must not retry what can
-- never fit. The decision is made first and applied only once record()
-- finds the lease new.
local function reserve(base)
  local id, n, fingerprint, job, flags = ARGV[base], tonumber(ARGV[base + 1]), ARGV[base + 2], ARGV[base + 3],
                                         ARGV[base + 4]
  local lease = P .. 'L:' .. id
  flags = tonumber(flags) or 0
  local dry = flags % 2 == 1
  if dry then
    -- a lease decided before answers its first outcome, as a reserve would
    local known = redis.call('GET', lease)
    if known then
      local _, _, _, _, _, _, f = lease_head(known)
      if f >= NOW then return replay(known, fingerprint) end
    end
  end
  local lifetime, m, incarnations = 0, 0, false -- m: the requirements held (the skipped left out)
  for i = 1, n do
    local K = ARGV[base + 3 + 2 * i]
    local lim = limit(K)
    if lim == nil then
      if math.floor(flags / 2 ^ i) % 2 == 0 then -- not optional
        return undecided(lease, fingerprint, ST_UNKNOWN, K)
      end
    else
      if lim.kind == 'b' and bounds_of(lim) == nil then return undecided(lease, fingerprint, ST_BOUNDS, K) end
      m = m + 1
      lims[m] = lim
      if lim.gen ~= 0 then incarnations = true end
      amount_texts[m] = ARGV[base + 4 + 2 * i]
      amounts[m] = tonumber(amount_texts[m])
      if lim.win > lifetime then lifetime = lim.win end
    end
  end
  -- A plain deny names the full limit whose room comes back last: the one
  -- the caller waits for.
  local decreasing, full, wait = nil, nil, 0
  for i = 1, m do
    local lim, amount = lims[i], amounts[i]
    if amount > lim.enf then return deny(lease, fingerprint, 0, ST_EXCEEDS, lim.key, lim, 3, amount, lim.enf, dry) end
    if lim.pend ~= 0 then
      if decreasing == nil then decreasing = i end
    elseif amount > lim.enf - lim.used then -- exact (common.lua: counters)
      local w = retry_after(lim, amount)
      if full == nil or w > wait then full, wait = i, w end
    end
  end
  if decreasing then
    local lim = lims[decreasing]
    return deny(lease, fingerprint, 10000, ST_DECREASING, lim.key, lim, 2, amounts[decreasing], lim.pend, dry)
  end
  if full then
    local lim = lims[full]
    return deny(lease, fingerprint, wait, ST_OK, '', lim, 1, amounts[full], lim.enf, dry)
  end
  if dry then return 1, 0, UNIX_NOW, ST_OK, '', '', 0, 0, 0, 0, 0 end
  for i = 1, m do -- a made limit's entries name its incarnation
    if lims[i].tp then made_incarnate(lims[i]); incarnations = true end
  end
  parts[7] = forget_text(lifetime); parts[8] = m
  for i = 1, m do
    local lim, p = lims[i], 4 + 4 * i
    parts[p + 1] = lim.key; parts[p + 2] = lim.kind
    parts[p + 3] = amount_texts[i]; parts[p + 4] = lim.at_text
  end
  local last = 9 + 4 * m
  if incarnations then -- a limit defined again after a delete, or made: its entries say which
    for i = 1, m do gens[i] = gen_token(lims[i]) end
    parts[last] = '^' .. table.concat(gens, ',', 1, m)
    last = last + 1
  end
  parts[last] = '#' .. fingerprint
  local text = table.concat(parts, ' ', 1, last)
  if job ~= '' then text = text .. '\n' .. job end
  local known = record(lease, text, ttl_texts[lifetime])
  if known then return replay(known, fingerprint) end
  for i = 1, m do
    if lims[i].kind == 'b' then budget_hold(lims[i], id, amounts[i], job) else hold(lims[i], amounts[i]) end
  end
  return 1, 0, UNIX_NOW, ST_OK, '', '', 0, 0, 0, 0, 0
end

local out = {}
local at = leases_at + 1
for _ = 1, tonumber(ARGV[leases_at]) do
  local o = #out
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5], out[o + 6],
    out[o + 7], out[o + 8], out[o + 9], out[o + 10], out[o + 11] = reserve(at)
  at = at + 5 + 2 * tonumber(ARGV[at + 1])
end
for _, L in pairs(limits) do save(L) end
return out
