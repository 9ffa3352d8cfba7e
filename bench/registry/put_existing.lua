-- wrk script: PUT /v1/admin/limits of an existing limit (one of the
-- registry's LIMITS, given after --), its capacity changing every time.
--
--   wrk -t1 -c1 -d10s --latency -s bench/registry/put_existing.lua http://127.0.0.1:8080 -- 100000

local n = 0
local limits = 1000

init = function(args)
  limits = tonumber(args[1]) or limits
end

request = function()
  n = n + 1
  local body = string.format(
    '{"key":"bench:tenant:%06d:llm:tpm","kind":"rolling","capacity":%d,"window_seconds":60,"unit":"tokens",' ..
    '"description":"tokens per minute"}', (n * 7919) % limits, 1000 + n % 1000)
  return wrk.format("PUT", "/v1/admin/limits", { ["Content-Type"] = "application/json" }, body)
end
