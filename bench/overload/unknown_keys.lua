-- wrk script: POST /v1/reserve on a random unknown key each time (the
-- unknown-key flood of bench/overload/run.sh). Every answer is a 404 with
-- unknown_limit_key:<key>; the daemon must remember nothing per key.
--
--   wrk -t1 -c4 -d20s -s bench/overload/unknown_keys.lua http://127.0.0.1:8080

local alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
local headers = { ["Content-Type"] = "application/json" }

local function random_chars(n)
  local out = {}
  for i = 1, n do
    local d = math.random(1, 32)
    out[i] = alphabet:sub(d, d)
  end
  return table.concat(out)
end

function setup(thread)
  thread:set("seed", math.random(1, 2147483647))
end

function init(args)
  math.randomseed((seed or os.time()) + os.time())
end

function request()
  -- A ULID (first character 0..7) and a key nobody defined.
  local first = math.random(1, 8)
  local id = alphabet:sub(first, first) .. random_chars(25)
  local body = '{"lease_id":"' .. id .. '","requirements":[{"key":"flood:' ..
    random_chars(40) .. '","amount":1}]}'
  return wrk.format("POST", "/v1/reserve", headers, body)
end
