-- usage.lua: live accounting of limit ARGV[4] for the admin API, after a
-- purge. Returns {enf, pend, used, active, debt_total, denied_total}, or
-- an empty array for an unknown key.
local L = load(ARGV[4])
if L == nil then return {} end
purge(L)
save(L)
return {L.enf, L.pend, L.used, L.act, L.debt, L.denied}
