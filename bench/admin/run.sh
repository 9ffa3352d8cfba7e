#!/usr/bin/env bash
# bench/admin/run.sh — what a flood of admin PUTs does to reserves, this
# build side by side with another (BASE, a git revision: the one before PUTs
# went off the event loops by default).
#
#   bench/admin/run.sh    (LIMITS=10000 DURATION=10s FLOOD_DURATION=12s BASE=3a562d5 by default)
#
# For each daemon (--threads 1 on core 0, a registry of LIMITS limits): one
# keep-alive connection of reserves (wrk -c1 --latency, core 1) alone, then
# again while 4 connections PUT as fast as the daemon answers (wrk -c4,
# core 1). Prints reserves/s and p99 of that one connection, and PUTs/s.
# Needs: wrk, taskset, curl, git.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
. bench/base_build.sh
BUILD=${BUILD:-build}
BASE=${BASE:-3a562d5}
LIMITS=${LIMITS:-10000}
DURATION=${DURATION:-10s}
FLOOD_DURATION=${FLOOD_DURATION:-12s} # outlasts the reserves it runs under
for tool in wrk taskset curl git; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing" >&2; exit 1; }
done

TMP=$(mktemp -d /tmp/rl_bench_admin.XXXXXX)
DAEMON_PID=""
cleanup() {
  [ -n "$DAEMON_PID" ] && kill -TERM "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null || true
  base_remove "$TMP/base"
  rm -rf "$TMP"
}
trap cleanup EXIT

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target ratelimiterd >/dev/null
base_build "$BASE" "$TMP/base"

python3 - "$TMP/limits.json" "$LIMITS" <<'PY'
import json, sys
path, n = sys.argv[1], int(sys.argv[2])
defs = [{"key": "bench:limit:%06d" % i, "kind": "rolling", "capacity": 1000000, "window_seconds": 60} for i in range(n)]
defs.append({"key": "global:llm:openai:gpt-4o:rpm", "kind": "rolling", "capacity": 2**53, "window_seconds": 1})
defs.append({"key": "global:llm:openai:gpt-4o:tpm", "kind": "rolling", "capacity": 2**53, "window_seconds": 1})
defs.append({"key": "global:llm:openai:gpt-4o:concurrency", "kind": "concurrency", "capacity": 2**53, "timeout_seconds": 1})
defs.append({"key": "tenant:acme:llm:daily_tokens", "kind": "rolling", "capacity": 2**53, "window_seconds": 1})
json.dump(defs, open(path, "w"))
PY

# wrk's "Latency ... 99%" line and Requests/sec.
summary() {
  awk '/Requests\/sec/ {rps=$2} / 99%/ {p99=$2} END {printf "%s req/s, p99 %s", rps, p99}' "$1"
}

run_one() { # name binary
  local name=$1 binary=$2 dir="$TMP/$1"
  mkdir -p "$dir"
  cp "$TMP/limits.json" "$dir/limits.json"
  taskset -c 0 "$binary" --threads 1 --listen 127.0.0.1:0 --registry "$dir/limits.json" 2>"$dir/log" &
  DAEMON_PID=$!
  local port=""
  for _ in $(seq 200); do
    port=$(sed -n 's/^ratelimiterd listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$dir/log")
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || { echo "run.sh: $name did not start" >&2; cat "$dir/log" >&2; exit 1; }
  local url="http://127.0.0.1:$port"
  taskset -c 1 wrk -t1 -c1 -d"$DURATION" --latency -s bench/http/reserve.lua "$url" >"$dir/alone"
  taskset -c 1 wrk -t1 -c4 -d"$FLOOD_DURATION" -s bench/admin/put_flood.lua "$url" >"$dir/puts" &
  local flood=$!
  sleep 0.5
  taskset -c 1 wrk -t1 -c1 -d"$DURATION" --latency -s bench/http/reserve.lua "$url" >"$dir/flooded"
  wait "$flood"
  printf '%-6s reserves alone: %s | during the PUT flood: %s | PUTs: %s\n' "$name" \
    "$(summary "$dir/alone")" "$(summary "$dir/flooded")" \
    "$(awk '/Requests\/sec/ {print $2 "/s"}' "$dir/puts")"
  kill -TERM "$DAEMON_PID"
  wait "$DAEMON_PID" || true
  DAEMON_PID=""
}

echo "$LIMITS limits, one reserve connection, 4 PUT connections, $DURATION each:"
run_one base "$TMP/base/build/ratelimiterd"
run_one this "$ROOT/$BUILD/ratelimiterd"
