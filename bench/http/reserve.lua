-- wrk script: POST /v1/reserve, a fresh lease id per request, a 4-requirement
-- LLM lease (~300 bytes of JSON, the shape of docs/api.md's example).
--
--   wrk -t1 -c64 -d10s -s bench/http/reserve.lua http://127.0.0.1:8080
--
-- Lease ids are ULIDs: 16 random characters per wrk thread, then a 10-character
-- counter, so no two requests of a run share one (a retried id would be
-- answered from the lease memory, which is not what we measure).
-- No response() callback: it would cost wrk a Lua call per answer; wrk's own
-- "Non-2xx or 3xx responses" line reports errors.

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

local function random_prefix()
  -- First character 0..7 keeps the ULID within 128 bits.
  local first = math.random(1, 8)
  local chars = { alphabet:sub(first, first) }
  for i = 2, 16 do
    local d = math.random(1, 32)
    chars[i] = alphabet:sub(d, d)
  end
  return table.concat(chars)
end

local headers = { ["Content-Type"] = "application/json" }
-- A daemon with data.tokens_file (bench/http/auth.sh): RL_BEARER_TOKEN=... wrk ...
local token = os.getenv("RL_BEARER_TOKEN")
if token and token ~= "" then headers["Authorization"] = "Bearer " .. token end
local body_head = '{"lease_id":"'
local body_tail = '","job_id":"01JBENCHJOB0000000000000000","requirements":[' ..
  '{"key":"global:llm:openai:gpt-4o:rpm","amount":1},' ..
  '{"key":"global:llm:openai:gpt-4o:tpm","amount":1800},' ..
  '{"key":"global:llm:openai:gpt-4o:concurrency","amount":1},' ..
  '{"key":"tenant:tenant_a:llm:daily_tokens","amount":1800}]}'

function setup(thread)
  thread:set("seed", math.random(1, 2147483647))
end

-- Seeded from /dev/urandom: wrk's main Lua state is never seeded, so wrk
-- processes started in the same second (bench/fleet runs one per daemon)
-- would otherwise send the same lease ids, retries of one lease.
function init(args)
  local f = io.open("/dev/urandom", "rb")
  if f then
    local b = f:read(4)
    f:close()
    seed = ((b:byte(1) * 256 + b:byte(2)) * 256 + b:byte(3)) * 256 + b:byte(4) -- 32 bits: exact in a double
  end
  math.randomseed((seed or os.time()) + os.time())
  prefix = random_prefix()
end

function request()
  counter = counter + 1
  local body = body_head .. prefix .. base32(counter, 10) .. body_tail
  return wrk.format("POST", "/v1/reserve", headers, body)
end
