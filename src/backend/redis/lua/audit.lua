-- audit.lua: the audit log of spend (ratelimiter/types.h "audit"), the
-- prelude after common.lua. One stream a limit, P..'audit:'..K, written by
-- the very script call that charges (complete.lua) or refunds (a budget's
-- reservation whose timeout passed, in whichever script purges it): an
-- entry exists if and only if its change was applied. Entry ids are
-- at_unix_ms-seq, so a query reads the entries since T with XRANGE T +, in
-- time order. Fields: l = the lease id (upper case), j = the job id of its
-- reserve ('' if none), r = what it reserved on K, a = the actual (0 for a
-- refund), p = a budget's period it belongs to (0 for a rolling limit), x =
-- 1 for a refund by timeout, else 0.
--
-- Kept ARGV[4] ms: every XADD trims what is older (MINID, '~': whole
-- macro nodes, cheaply), and a stream that nobody writes for that long (and
-- a day) is deleted by its TTL, so the log never grows past its retention.
local RETENTION_MS = tonumber(ARGV[4])
local AUDIT_MINID = fmt(math.max(0, UNIX_NOW - RETENTION_MS)) -- older entries are trimmed
local audit_ttl_set = {} -- the streams whose TTL this call has set

-- XADD of one entry at stream id `id`; Redis's error (a table) if it refused.
local function audit_add(k, id, lease, job, reserved, actual, period_start, expired)
  return redis.pcall('XADD', k, 'MINID', '~', AUDIT_MINID, id, 'l', lease, 'j', job, 'r', reserved, 'a', actual,
                     'p', period_start, 'x', expired)
end

-- Appends an entry to L's stream at Unix ms `at`. Entries are written in
-- time order (every writer purges the limit first, in expiry order); should
-- Redis's clock go back, the entry is filed at the newest entry's
-- millisecond instead, so that the stream stays in order.
local function audit(L, at, lease, job, reserved, actual, period_start, expired)
  local k = P .. 'audit:' .. L.key
  local r, a, p, x = fmt(reserved), fmt(actual), fmt(period_start), expired and '1' or '0'
  local added = audit_add(k, fmt(at) .. '-*', lease, job, r, a, p, x)
  if type(added) == 'table' and added.err then
    if not string.find(added.err, 'equal or smaller', 1, true) then error(added) end
    local newest = redis.call('XREVRANGE', k, '+', '-', 'COUNT', 1)
    added = audit_add(k, string.match(newest[1][1], '^%d+') .. '-*', lease, job, r, a, p, x)
    if type(added) == 'table' and added.err then error(added) end
  end
  if not audit_ttl_set[k] then
    redis.call('PEXPIRE', k, RETENTION_MS + 86400000)
    audit_ttl_set[k] = true
  end
end
