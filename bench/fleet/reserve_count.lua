-- wrk script: bench/http/reserve.lua's load (its lease,
-- lease ids that differ between wrk processes), counting the answers: how many
-- leases this wrk saw admitted (200 with "allowed":true), denied (200 with
-- "allowed":false) and anything else. done() prints one line:
--
--   fleet_count admitted=N denied=N other=N
--
--   wrk -t1 -c64 -d5s -s bench/fleet/reserve_count.lua http://127.0.0.1:8080
--
-- bench/fleet/run.sh sums the admitted counts of its wrk processes and holds
-- them against the capacity of the exhausted limit. A request still in flight
-- when wrk stops is not counted, so the run lasts well past exhaustion: the
-- answers then in flight are denials.
-- The response() callback costs wrk a Lua call per answer; the latency runs use
-- bench/http/reserve.lua.

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "../http/reserve.lua")

admitted, denied, other = 0, 0, 0

local threads = {}
local reserve_setup = setup

function setup(thread)
  reserve_setup(thread)
  table.insert(threads, thread)
end

function response(status, headers, body)
  if status == 200 and body:find('"allowed":true', 1, true) then
    admitted = admitted + 1
  elseif status == 200 and body:find('"allowed":false', 1, true) then
    denied = denied + 1
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local a, d, o = 0, 0, 0
  for _, thread in ipairs(threads) do
    a = a + thread:get("admitted")
    d = d + thread:get("denied")
    o = o + thread:get("other")
  end
  io.write(string.format("fleet_count admitted=%d denied=%d other=%d\n", a, d, o))
end
