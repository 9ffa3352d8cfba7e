-- usage.lua: live accounting of limit ARGV[5] for the admin API, after a
-- purge; ARGV[6..] its bounds if the daemon knows it as a budget
-- (budget.lua), then the template that makes it if the daemon knows one
-- (made.lua: a key without a limit of its own reads as the fresh limit
-- made from it; nothing is written for it). Returns {enf, pend, used, active, debt_total, denied_total,
-- period_start, period_end, committed, allotted} (period and committed 0
-- but for a budget), an empty array for an unknown key, or {'bounds'} for
-- a budget whose bounds were not passed. Of allotments (allot.lua), what
-- their daemons said they hold live is used (and its entries active), the
-- rest is allotted: set aside, not used.
read_templates(read_bounds(6))
local L = limit(ARGV[5])
if L == nil then return {} end
save(L)
if L.kind ~= 'b' then
  local unused, allotments, entries = allotments_of(L)
  return {L.enf, L.pend, fmt(L.used - unused), L.act - allotments + entries, L.debt, L.denied, 0, 0, 0, fmt(unused)}
end
if bounds_of(L) == nil then return {'bounds'} end
return {L.enf, L.pend, L.used, L.act, L.debt, L.denied, fmt(L.ps), fmt(L.pe), fmt(L.com), 0}
