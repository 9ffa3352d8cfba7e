#!/usr/bin/env bash
# bench/http/tail.sh — one daemon alone, its latency percentiles and what its
# journal did: where bench/http/run.sh's p99 comes from.
#
#   bench/http/tail.sh [ratelimiterd flag...]      (DURATION=15s CONFIG=bench/http/config.yaml)
#
# Starts ratelimiterd --threads 1 on core 0 with a data directory of its own
# (on disk, under the build directory), drives POST /v1/reserve with wrk
# -t1 -c64 on core 1 (bench/http/reserve.lua), prints p50 ... p99.9, max and
# the requests answered, then the daemon's lines about journal compaction.
# CONFIG=<file> runs it with another config (e.g. journal_compact_bytes set
# past any size: no compaction). Needs: wrk, taskset.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
DURATION=${DURATION:-15s}
CONFIG=${CONFIG:-bench/http/config.yaml}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target ratelimiterd >/dev/null

DATA=$(mktemp -d "$(cd "$BUILD" && pwd)/rl_bench_tail.XXXXXX")
PID=""
cleanup() {
  [ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$DATA"
}
trap cleanup EXIT
cp bench/http/limits.json "$DATA/limits.json"
{ cat bench/http/reserve.lua; cat <<'LUA'
done = function(summary, latency, requests)
  for _, p in ipairs({50, 90, 99, 99.9}) do
    io.write(string.format("p%g %.2f ms  ", p, latency:percentile(p) / 1000))
  end
  io.write(string.format("max %.1f ms  %d requests\n", latency.max / 1000, summary.requests))
end
LUA
} >"$DATA/reserve_tail.lua"

taskset -c 0 "$BUILD/ratelimiterd" -c "$CONFIG" --listen 127.0.0.1:0 --registry "$DATA/limits.json" \
  --threads 1 "$@" 2>"$DATA/daemon.log" &
PID=$!
PORT=""
for _ in $(seq 1 200); do
  PORT=$(sed -n 's/^ratelimiterd listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$DATA/daemon.log")
  [ -n "$PORT" ] && break
  sleep 0.05
done
[ -n "$PORT" ] || { echo "tail.sh: ratelimiterd did not start:" >&2; cat "$DATA/daemon.log" >&2; exit 1; }
taskset -c 1 wrk -t1 -c64 -d"$DURATION" -s "$DATA/reserve_tail.lua" "http://127.0.0.1:$PORT" | tail -1
grep -E "journal compact" "$DATA/daemon.log" || echo "(no compaction)"
