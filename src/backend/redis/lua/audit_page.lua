-- audit_page.lua: a page of limit ARGV[5]'s audit log (audit.lua): its
-- entries from Unix ms ARGV[6] on, at most ARGV[7], oldest first, as XRANGE
-- answers them. Entries past their retention that trimming has not reached
-- yet (it drops whole macro nodes) are left out.
local since = math.max(tonumber(ARGV[6]), UNIX_NOW - RETENTION_MS)
return redis.call('XRANGE', P .. 'audit:' .. ARGV[5], fmt(since), '+', 'COUNT', tonumber(ARGV[7]))
