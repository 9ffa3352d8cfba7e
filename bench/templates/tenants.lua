-- wrk script: POST /v1/reserve of one tenant's daily tokens, a tenant never
-- named before in each request (tenant:<thread prefix><counter>:llm:daily_tokens),
-- so that every reserve makes a limit from the template.
--
--   wrk -t1 -c64 -d15s -s bench/templates/tenants.lua http://127.0.0.1:8080
--
-- Lease ids as bench/http/reserve.lua makes them; each wrk run its own
-- random prefix, so a second run names other tenants.

local alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
local counter = 0
local prefix = nil

local function base32(n, width)
  local out = {}
  for i = width, 1, -1 do
    local digit = n % 32
    out[i] = alphabet:sub(digit + 1, digit + 1)
    n = (n - digit) / 32
  end
  return table.concat(out)
end

function init(args)
  local f = io.open("/dev/urandom", "rb")
  local b = f:read(4)
  f:close()
  math.randomseed(((b:byte(1) * 256 + b:byte(2)) * 256 + b:byte(3)) * 256 + b:byte(4))
  -- First character 0..7 keeps the ULID within 128 bits.
  local first = math.random(1, 8)
  local chars = { alphabet:sub(first, first) }
  for i = 2, 16 do
    local d = math.random(1, 32)
    chars[i] = alphabet:sub(d, d)
  end
  prefix = table.concat(chars)
end

local headers = { ["Content-Type"] = "application/json" }

function request()
  counter = counter + 1
  local id = prefix .. base32(counter, 10)
  return wrk.format("POST", "/v1/reserve", headers,
    '{"lease_id":"' .. id .. '","requirements":[{"key":"tenant:t' .. prefix .. counter ..
    ':llm:daily_tokens","amount":100}]}')
end

