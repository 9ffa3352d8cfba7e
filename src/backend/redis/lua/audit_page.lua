-- audit_page.lua: a page of limit ARGV[5]'s audit log (audit.lua): its
-- entries from Unix ms ARGV[6] on, at most ARGV[7], oldest first, as XRANGE
-- answers them, up to the millisecond before Redis's now. Entries past
-- their retention that trimming has not reached yet (it drops whole macro
-- nodes) are left out.
-- Entries of the current millisecond (or later: audit.lua files an entry
-- at the newest one's millisecond if the clock went back) are not listed
-- yet: a Complete may still add one to it, and a reader paging by
-- next_since_unix_ms would never see that one.
local since = math.max(tonumber(ARGV[6]), UNIX_NOW - RETENTION_MS)
if since >= UNIX_NOW then return {} end
return redis.call('XRANGE', P .. 'audit:' .. ARGV[5], fmt(since), fmt(UNIX_NOW - 1) .. '-18446744073709551615',
                  'COUNT', tonumber(ARGV[7]))
