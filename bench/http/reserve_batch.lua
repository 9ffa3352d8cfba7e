-- wrk script: POST /v1/reserve/batch, 256 leases per request, each a fresh
-- lease id with the 4-requirement LLM lease of reserve.lua (~75 KB a body).
--
--   wrk -t1 -c64 -d10s -s bench/http/reserve_batch.lua http://127.0.0.1:8080
--
-- Leases per second = wrk's Requests/sec x 256.

local alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
local batch_size = 256
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
  local first = math.random(1, 8) -- 0..7 keeps the ULID within 128 bits
  local chars = { alphabet:sub(first, first) }
  for i = 2, 16 do
    local d = math.random(1, 32)
    chars[i] = alphabet:sub(d, d)
  end
  return table.concat(chars)
end

local headers = { ["Content-Type"] = "application/json" }
local item_head = '{"lease_id":"'
local item_tail = '","job_id":"01JBENCHJOB0000000000000000","requirements":[' ..
  '{"key":"global:llm:openai:gpt-4o:rpm","amount":1},' ..
  '{"key":"global:llm:openai:gpt-4o:tpm","amount":1800},' ..
  '{"key":"global:llm:openai:gpt-4o:concurrency","amount":1},' ..
  '{"key":"tenant:tenant_a:llm:daily_tokens","amount":1800}]}'

function setup(thread)
  thread:set("seed", math.random(1, 2147483647))
end

function init(args)
  math.randomseed((seed or os.time()) + os.time())
  prefix = random_prefix()
end

function request()
  local items = {}
  for i = 1, batch_size do
    counter = counter + 1
    items[i] = item_head .. prefix .. base32(counter, 10) .. item_tail
  end
  local body = '{"requests":[' .. table.concat(items, ",") .. ']}'
  return wrk.format("POST", "/v1/reserve/batch", headers, body)
end
