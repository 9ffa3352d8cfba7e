#!/usr/bin/env bash
# bench/templates/run.sh — about a million tenants' first calls through one
# template, on the daemon: its resident memory before, while every tenant's
# limit holds its reservation, once the window is over and the sweep has
# forgotten them, and once their leases are forgotten too (lease_memory_ms,
# the daemon's 600 s by default, and two sweeps later); then as many other
# tenants the same way.
#
#   bench/templates/run.sh     (DURATION=15s WINDOW_SECONDS=60 by default:
#                               about 23 minutes in all)
#   LEASE_MEMORY_MS=2000 bench/templates/run.sh      (a shorter lease memory)
#
# ratelimiterd --threads 1 (memory backend, no journal or audit log: the
# limits are the subject) on core 0, wrk -t1 -c64 on core 1 with
# bench/templates/tenants.lua: each reserve names a tenant key never named
# before, made from "tenant:{tenant}:llm:daily_tokens" (rolling, WINDOW_SECONDS).
# Prints the daemon's resident memory (and its anonymous part) and its peak,
# and the reserves/s of first uses.
# Needs: wrk, taskset, curl.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${BUILD:-build}
DURATION=${DURATION:-15s}
WINDOW_SECONDS=${WINDOW_SECONDS:-60}
LEASE_MEMORY_MS=${LEASE_MEMORY_MS:-600000}
PORT=${PORT:-18090}
for tool in wrk taskset curl; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing (apt-get install wrk util-linux curl)" >&2; exit 1; }
done
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target ratelimiterd >/dev/null

TMP=$(mktemp -d /tmp/rl_bench_templates.XXXXXX)
PID=""
cleanup() {
  [ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
printf 'memory:\n  lease_memory_ms: %s\n' "$LEASE_MEMORY_MS" > "$TMP/config.yaml"
taskset -c 0 "$ROOT/$BUILD/ratelimiterd" -c "$TMP/config.yaml" --listen "127.0.0.1:$PORT" --threads 1 \
  --registry "$TMP/limits.json" --no-journal --no-audit 2>"$TMP/daemon.log" &
PID=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done

# Resident memory as smaps_rollup counts it (exact, where status's VmRSS may
# lag), the anonymous part of it (the rest is the program's mapped files),
# and the peak.
mem() {
  awk '/^Rss:/ {rss = $2} /^Anonymous:/ {anon = $2}
       END {printf "RSS %.1f MB (anonymous %.1f MB)  ", rss / 1024, anon / 1024}' "/proc/$PID/smaps_rollup"
  awk '/^VmHWM/ {printf "peak %.1f MB", $2 / 1024}' "/proc/$PID/status"
}
curl -sf -X PUT "http://127.0.0.1:$PORT/v1/admin/templates" -d "{\"pattern\":\"tenant:{tenant}:llm:daily_tokens\",
  \"kind\":\"rolling\",\"capacity\":1000000,\"window_seconds\":$WINDOW_SECONDS,\"unit\":\"tokens\"}" >/dev/null
echo "new tenants for $DURATION a round through one template (rolling, ${WINDOW_SECONDS} s window, lease memory ${LEASE_MEMORY_MS} ms), the daemon on one loop:"
echo "  before:                              $(mem)"
for round in 1 2; do
  out=$(taskset -c 1 wrk -t1 -c64 -d"$DURATION" -s bench/templates/tenants.lua "http://127.0.0.1:$PORT")
  made=$(awk '/requests in/ {print $1}' <<<"$out")
  rate=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  if grep -q "Non-2xx" <<<"$out"; then echo "run.sh: non-2xx answers:" >&2; echo "$out" >&2; fi
  echo "  round $round, $made tenants made ($rate/s):  $(mem)"
  sleep $((WINDOW_SECONDS + 4)) # the windows end, then a sweep (every second) forgets them
  echo "  round $round, forgotten:               $(mem)"
  # the last lease falls due lease memory after the window: two sweeps after that
  rest=$(((LEASE_MEMORY_MS + 999) / 1000 + 2 - 4))
  sleep $((rest > 0 ? rest : 0))
  echo "  round $round, leases forgotten too:    $(mem)"
done
