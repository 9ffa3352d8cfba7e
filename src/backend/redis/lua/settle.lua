-- settle.lua: what the Completes of leases a daemon decided from its
-- allotments leave to the store (src/backend/memory/memory_local.h): for
-- each rolling key a Complete charged, its audit entry (audit.lua), and its
-- overage (the actual above what the reservation held), charged by the
-- limit's policy (overage_charge) as an entry of its own for the rest of
-- the reservation's life (in the reservation's own count of entries: the
-- daemon counts it), exactly as complete.lua charges a reservation the
-- store decided. Concurrency holds spend nothing: they have no entry.
-- ARGV[5] = count, then per entry 8 values: key, lease id, job id,
-- reserved, actual, overage, overage_ms (what the reservation had left to
-- live; 0: its window is over, nothing to charge), and the incarnation of
-- the limit the lease was decided from (common.lua's gen, as allot.lua
-- answered it). A key the store no longer holds is skipped, and so is one
-- deleted and defined again since (another incarnation): as complete.lua
-- skips an entry of a deleted limit, nothing of the old limit's leases is
-- charged or audited on the new one, which starts empty. Returns 0.
local at = 6
for _ = 1, tonumber(ARGV[5]) do
  local K, lease, job = ARGV[at], ARGV[at + 1], ARGV[at + 2]
  local reserved, actual = tonumber(ARGV[at + 3]), tonumber(ARGV[at + 4])
  local extra, for_ms = tonumber(ARGV[at + 5]), tonumber(ARGV[at + 6])
  local incarnation = tonumber(ARGV[at + 7])
  at = at + 8
  local L = limit(K)
  if L ~= nil and L.gen == incarnation then
    if L.kind == 'r' and extra > 0 and for_ms > 0 then
      -- against what the limit's reservations really hold; in the
      -- reservation's own entry (the daemon counts it), so no entry more
      local unused = allotments_of(L)
      local charged = overage_charge(L, extra, L.used - unused)
      if charged > 0 then
        redis.call('ZADD', L.ek, 'NX', NOW + for_ms, fmt(NOW + for_ms))
        change_bucket(L, NOW + for_ms, charged, 0)
      end
    end
    audit(L, UNIX_NOW, lease, job, reserved, actual, 0, false)
  end
end
for _, L in pairs(limits) do try_decrease(L); save(L) end
return 0
