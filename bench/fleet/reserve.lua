-- wrk script: bench/http/reserve.lua's load (POST /v1/reserve, a fresh lease
-- id per request, the 4-requirement LLM lease) for several wrk processes at
-- once, as bench/fleet/run.sh runs one per daemon.
--
--   wrk -t1 -c64 -d10s --latency -s bench/fleet/reserve.lua http://127.0.0.1:8080
--
-- Why not reserve.lua itself: its lease ids start with a prefix drawn from
-- math.random seeded with a number drawn in wrk's main Lua state, whose
-- generator is never seeded, plus os.time(); so wrk processes started in the
-- same second send the same lease ids. Through the daemons of one Redis those
-- are retries of one lease: answered with its first outcome (an admission
-- counted by every wrk, while Redis counts it once). Here each wrk thread's
-- seed comes from /dev/urandom.

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "../http/reserve.lua")

local reserve_init = init

function init(args)
  local f = io.open("/dev/urandom", "rb")
  if f then
    local b = f:read(4)
    f:close()
    -- reserve.lua's init seeds with seed + os.time(): a 32-bit random seed
    -- keeps that sum exact in a double.
    seed = ((b:byte(1) * 256 + b:byte(2)) * 256 + b:byte(3)) * 256 + b:byte(4)
  end
  reserve_init(args)
end
