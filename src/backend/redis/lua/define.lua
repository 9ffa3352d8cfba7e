-- define.lua: creates or changes limits. ARGV[5] = mode: 'put' (an admin
-- change) or 'restore' (put back a definition the store lost: a key it
-- holds is left as it is), ARGV[6] = count, then per limit 11 values: key,
-- kind (r|c|b), capacity, lifetime ms (window or timeout), overage
-- (debt|deny), the definition as JSON (what listings return), then a
-- budget's bounds (budget.lua: cal and four instants; '' and zeros for
-- other kinds). An increase applies at once and cancels a pending decrease;
-- a decrease applies once usage allows. A change of kind needs a limit
-- that holds nothing (after its purge): reservations of the old kind would
-- go on by the old kind's rules (an hour's rolling reservation on a limit
-- whose holds time out in 5 s); what a budget charged is not a hold. A
-- budget's new period or zone keeps what it counted (budget_enter). What
-- daemons hold in allotments (allot.lua) and have not used does not count
-- (but for a change to a budget): each daemon's mirror of the limit changes
-- kind once what it holds of it is gone.
-- Returns one code per limit: 0 active, 1 decreasing, 2 in use (a change of
-- kind refused: nothing written), 3 left as it was (restore of a key the
-- store holds), 4 left deleted (restore of a key the store deleted: its
-- tombstone, delete.lua).
--
-- A key whose limit was made from a template (made.lua) becomes the key's
-- own, as a definition over it, keeping what it holds.
--
-- Every change is numbered for the daemons that follow the definitions
-- (common.lua's number_change); the store's epoch is made when the first
-- definition is written, so a store that lost everything gets a new one. A
-- key defined over its tombstone is a new incarnation (common.lua's gen).
local restore, count = ARGV[5] == 'restore', tonumber(ARGV[6])
local ARGS = 11 -- per limit

-- Every budget's bounds first: a call that must fail fails before it writes.
for i = 0, count - 1 do
  local at = 7 + ARGS * i
  if ARGV[at + 1] == 'b' then take_bounds(ARGV[at], at + 6) end
end
-- Before anything else, so that a restore that finds every key in place
-- still leaves an epoch for the followers to settle on.
if count > 0 then ensure_epoch() end

local function define(at)
  local K, kind, capacity, cal = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2]), ARGV[at + 6]
  local lk = P .. 'l:' .. K
  local L = load(K) -- as it was: its kind and buckets
  -- a limit made from a template is not the key's own definition: a put
  -- (or a restore of the key's own) makes it the key's, keeping its usage
  if restore and L ~= nil and not L.tp then return 3 end
  -- no definition, but numbered changes: deleted (its tombstone)
  local deleted = L == nil and redis.call('ZSCORE', P .. 'defs:changed', K) ~= false
  if restore and deleted then return 4 end
  local code = 0
  if L and L.enf ~= nil then
    purge(L)
    -- what its reservations really hold: daemons' allotments (allot.lua)
    -- hold room set aside, not reservations
    local unused, allotments, entries = allotments_of(L)
    -- but a budget counts no buckets: an allotment's would be dropped from
    -- used on the way in and taken from it again when it expires
    if kind == 'b' then unused, allotments, entries = 0, 0, 0 end
    code = redefine(L, kind, capacity, tonumber(ARGV[at + 3]), ARGV[at + 4], cal, unused, allotments, entries)
    if code == 2 then
      save(L) -- what the purge freed
      return 2
    end
    if L.tp then made_own(L) end
  end
  redis.call('HSET', lk, 'kind', kind, 'cap', ARGV[at + 2], 'win', ARGV[at + 3], 'ovg', ARGV[at + 4],
             'def', ARGV[at + 5])
  if kind == 'b' then redis.call('HSET', lk, 'cal', cal) end
  redis.call('SADD', P .. 'defs', K)
  local n = number_change(K)
  if L == nil or L.enf == nil then -- new
    redis.call('HSET', lk, 'enf', ARGV[at + 2], 'pend', 0, 'used', 0, 'act', 0, 'debt', 0, 'denied', 0)
    if deleted then redis.call('HSET', lk, 'gen', n) end
    if kind == 'b' then
      local s, e = period_now(BOUNDS[K])
      redis.call('HSET', lk, 'ps', fmt(s), 'pe', fmt(e), 'com', 0)
    end
    return 0
  end
  save(L)
  return code
end

local out = {}
for i = 0, count - 1 do out[i + 1] = define(7 + ARGS * i) end
return out
