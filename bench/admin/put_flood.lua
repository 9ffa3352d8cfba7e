-- wrk script: PUT /v1/admin/limits over and over, one limit among the
-- registry's, its capacity changing every time (each PUT rewrites the file).
--
--   wrk -t1 -c4 -d10s -s bench/admin/put_flood.lua http://127.0.0.1:8080

local n = 0

request = function()
  n = n + 1
  local body = string.format(
    '{"key":"bench:put:%d","kind":"rolling","capacity":%d,"window_seconds":60}', n % 100, 1000 + n % 1000)
  return wrk.format("PUT", "/v1/admin/limits", { ["Content-Type"] = "application/json" }, body)
end
