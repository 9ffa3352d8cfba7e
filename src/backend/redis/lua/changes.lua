-- changes.lua: the definitions and templates changed since change ARGV[6] of the store
-- epoch ARGV[5], at most ARGV[7] of them, for a daemon that follows them
-- (its definition cache: to define them again should the store lose them).
-- Returns {epoch, version, more, key, json, key, json, ...}, json '' for a
-- key deleted since (delete.lua: a tombstone, never to be put back); a
-- template's change is named 'template '..pattern, with the template's
-- JSON (made.lua), '' once deleted: epoch '' when
-- the store holds no numbered definition (new, or it lost everything);
-- version = the change to follow on from; more = 1 when a full page was
-- returned and more may follow. From another epoch than ARGV[5] every
-- definition is changed. (define.lua numbers the changes.)
local meta = redis.call('HMGET', P .. 'defs:version', 'epoch', 'n')
local epoch, n = meta[1], tonumber(meta[2]) or 0
if not epoch then return {'', 0, 0} end
local page = tonumber(ARGV[7])
if page == 0 then return {epoch, n, 0} end
local since = 0
if epoch == ARGV[5] then since = tonumber(ARGV[6]) end
local changed = redis.call('ZRANGEBYSCORE', P .. 'defs:changed', '(' .. since, '+inf', 'WITHSCORES',
                           'LIMIT', 0, page)
local out = {epoch, n, 0}
for i = 1, #changed, 2 do
  local T = string.match(changed[i], '^template (.+)$') -- a template's change (made.lua)
  local json
  if T then json = redis.call('HGET', P .. 't:' .. T, 'def')
  else json = redis.call('HGET', P .. 'l:' .. changed[i], 'def') end
  out[#out + 1] = changed[i]; out[#out + 1] = json or ''
end
if #changed == 2 * page then out[2] = changed[#changed]; out[3] = 1 end
return out
