#!/usr/bin/env bash
# bench/redis/made_memory.sh — Redis memory of limits made from a template:
# a million tenant keys named once each (bench_redis_backend's "tenants"
# mode: every lease names three limits PUT and one tenant's key made from
# the template tenant:{tenant}:llm:daily_tokens), then their windows pass.
# Prints Redis's used_memory before, right after (every made limit live),
# and once the windows and lease records are over, with MEMORY USAGE of one
# made limit's keys and of one lease record; and the Redis time per lease.
#
#   bench/redis/made_memory.sh
#       LEASES=1000000 WINDOW_SECONDS=120 LEASE_MEMORY_MS=1000 by default
#
# The windows are long enough for every made limit to be live at once at
# the end of the run; the lease memory short, so that lease records (the
# same for a key's own limits: not what is measured here) leave with them.
# Needs: redis-server, redis-cli, taskset.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
LEASES=${LEASES:-1000000}
WINDOW_SECONDS=${WINDOW_SECONDS:-120}
LEASE_MEMORY_MS=${LEASE_MEMORY_MS:-1000}
PER_CALL=256
CALLS=$(((LEASES + PER_CALL - 1) / PER_CALL))

for tool in redis-server redis-cli taskset; do
  command -v "$tool" >/dev/null || { echo "made_memory.sh: $tool is missing" >&2; exit 1; }
done
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target bench_redis_backend >/dev/null

TMP=$(mktemp -d /tmp/rl_made_memory.XXXXXX)
REDIS_PID=""
cleanup() {
  [ -n "$REDIS_PID" ] && kill -TERM "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
REDIS_PORT=""
for _ in $(seq 1 50); do
  p=$((20000 + RANDOM % 20000))
  port_in_use "$p" || { REDIS_PORT=$p; break; }
done
[ -n "$REDIS_PORT" ] || { echo "made_memory.sh: no free port for redis-server" >&2; exit 1; }
taskset -c 1 redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$TMP" \
  --save '' --appendonly no --daemonize no --logfile "$TMP/redis.log" &
REDIS_PID=$!
redis() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }
for _ in $(seq 1 100); do
  grep -q "Ready to accept connections" "$TMP/redis.log" 2>/dev/null && break
  sleep 0.05
done
if ! kill -0 "$REDIS_PID" 2>/dev/null || [ "$(redis config get dir | sed -n 2p)" != "$TMP" ]; then
  echo "made_memory.sh: redis-server did not start on 127.0.0.1:$REDIS_PORT" >&2
  exit 1
fi
used() { redis info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

before=$(used)
redis config resetstat >/dev/null
taskset -c 0 "$BUILD/bench_redis_backend" "$REDIS_PORT" "$PER_CALL" "$CALLS" tenants "$LEASE_MEMORY_MS" "$WINDOW_SECONDS" ||
  echo "(some leases failed: Redis did not answer a call in time; the rest are measured)"
after=$(used)
stats=$(redis info commandstats | sed -n 's/^cmdstat_evalsha:.*,usec=\([0-9]*\),.*/\1/p')
made=$(redis zcard "bench:m:tenant:{tenant}:llm:daily_tokens")
first() { redis --scan --pattern "$1" | head -1 || true; } # (head ends the scan early)
one=$(first 'bench:l:tenant:*')
one=${one#bench:l:}
usage() { redis memory usage "$1" | tr -d '\r'; }
limit_bytes=$(($(usage "bench:l:$one") + $(usage "bench:e:$one") + $(usage "bench:a:$one")))
record=$(first 'bench:L:*')
record_bytes=$(usage "$record")
echo "used_memory before: $before bytes ($(mib "$before"))"
echo "after $((CALLS * PER_CALL)) leases, each naming a new tenant's key: $after bytes ($(mib "$after")), $made made limits live"
echo "  one made limit's keys (l:, e:, a:): $limit_bytes bytes by MEMORY USAGE; one lease record: $record_bytes bytes"
echo "  Redis time: $(awk -v u="$stats" -v n="$((CALLS * PER_CALL))" 'BEGIN { printf "%.1f", u / n }') us per lease"
wait_s=$((WINDOW_SECONDS + LEASE_MEMORY_MS / 1000 + 8)) # and the 5 s m:PATTERN outlives its last limit
echo "waiting ${wait_s} s for the windows and the lease records to end..."
sleep "$wait_s"
for _ in $(seq 1 120); do # Redis expires keys a sample at a time: until none is left
  [ "$(redis dbsize)" -le 20 ] && [ "$(redis exists 'bench:m:tenant:{tenant}:llm:daily_tokens')" = 0 ] && break
  sleep 1
done
final=$(used)
echo "once they ended: $final bytes ($(mib "$final")), $(redis dbsize) keys left (the template, the limits PUT, the bookkeeping)"
