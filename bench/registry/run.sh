#!/usr/bin/env bash
# bench/registry/run.sh — the registry at 1k and 100k limits: this tree side
# by side with BASE (the registry before its log: every put rewrote the whole
# limits.json) and with the SQLite prototype (bench/registry/sqlite_registry.c),
# in one run.
#
#   bench/registry/run.sh    (SIZES="1000 100000" BASE=1a03e6d PUTS=500 DURATION=10s PARTS="api daemon")
#
# Through the API (bench_registry, each store in turn): start-up (open and
# list every definition), the memory the open added, PUT p50/p99 (PUTS
# durable puts one at a time; BASE at 100k: PUTS/5, each rewrites ~10 MB),
# DELETE, start-up again with the log those puts left, disk.
# Through the daemon (BASE's ratelimiterd and this one, --threads 1 on core
# 0, the memory backend): start-up to its "listening" line (median of 3),
# its RSS then, and PUT /v1/admin/limits p50/p99 of one keep-alive
# connection putting existing limits back to back (wrk -c1 --latency, core 1).
# Needs: wrk, taskset, curl, git, python3, pkg-config, libsqlite3-dev.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
. bench/base_build.sh
BUILD=${BUILD:-build}
BASE=${BASE:-1a03e6d}
SIZES=${SIZES:-"1000 100000"}
PUTS=${PUTS:-500}
DURATION=${DURATION:-10s}
PARTS=${PARTS:-"api daemon"}
for tool in wrk taskset curl git python3 pkg-config; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing" >&2; exit 1; }
done

TMP=$(mktemp -d /tmp/rl_bench_registry.XXXXXX)
DAEMON_PID=""
cleanup() {
  [ -n "$DAEMON_PID" ] && kill -TERM "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null || true
  base_remove "$TMP/base"
  rm -rf "$TMP"
}
trap cleanup EXIT

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target ratelimiterd bench_registry >/dev/null
base_build "$BASE" "$TMP/base"
cmake --build "$TMP/base/build" -j "$(nproc)" --target ratelimiter >/dev/null
# The same bench against BASE's library (the public API only).
cc -std=c11 -O2 -D_GNU_SOURCE -I"$TMP/base/include" bench/registry/bench_registry.c \
  "$TMP/base/build/libratelimiter.a" $(pkg-config --libs libcjson libcurl glib-2.0) -lpthread \
  -o "$TMP/bench_registry_base"

api_part() {
  echo "== through the API (bench_registry) =="
  for size in $SIZES; do
    base_puts=$PUTS
    [ "$size" -ge 100000 ] && base_puts=$((PUTS / 5))
    taskset -c 0 "$TMP/bench_registry_base" "$TMP/api.json" "$size" "$base_puts" | sed 's/^store=registry/store=base/'
    taskset -c 0 "$BUILD/bench_registry" "$TMP/api.json" "$size" "$PUTS" | sed 's/^store=registry/store=this/'
    taskset -c 0 "$BUILD/bench_registry" --store sqlite "$TMP/api.db" "$size" "$PUTS"
  done
}

make_registry() { # path size
  python3 - "$1" "$2" <<'PY'
import json, sys
path, n = sys.argv[1], int(sys.argv[2])
defs = [{"key": "bench:tenant:%06d:llm:tpm" % i, "kind": "rolling", "capacity": 1000000, "window_seconds": 60,
         "timeout_seconds": 0, "unit": "tokens", "description": "tokens per minute", "overage": "debt"}
        for i in range(n)]
with open(path, "w") as f:
    f.write("[\n" + ",\n".join("  " + json.dumps(d, separators=(",", ":")) for d in defs) + "\n]\n")
PY
}

# Starts binary on dir/limits.json; sets DAEMON_PID, PORT and STARTUP_MS (to its "listening" line).
start_daemon() { # binary dir
  local t0 t1
  t0=$(date +%s%N)
  taskset -c 0 "$1" --threads 1 --listen 127.0.0.1:0 --registry "$2/limits.json" --no-journal --no-audit \
    >/dev/null 2>"$2/log" &
  DAEMON_PID=$!
  PORT=""
  for _ in $(seq 20000); do
    PORT=$(sed -n 's/^ratelimiterd listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$2/log")
    [ -n "$PORT" ] && break
    sleep 0.001
  done
  t1=$(date +%s%N)
  [ -n "$PORT" ] || { echo "run.sh: $1 did not start" >&2; cat "$2/log" >&2; exit 1; }
  STARTUP_MS=$(((t1 - t0) / 1000000))
}

stop_daemon() {
  kill -TERM "$DAEMON_PID"
  wait "$DAEMON_PID" || true
  DAEMON_PID=""
}

daemon_run() { # name binary size
  local name=$1 binary=$2 size=$3 dir="$TMP/$1-$3" starts=() rss
  mkdir -p "$dir"
  make_registry "$dir/limits.json" "$size"
  for _ in 1 2 3; do
    rm -f "$dir/limits.json.log"
    start_daemon "$binary" "$dir"
    starts+=("$STARTUP_MS")
    rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$DAEMON_PID/status")
    stop_daemon
  done
  start_daemon "$binary" "$dir"
  taskset -c 1 wrk -t1 -c1 -d"$DURATION" --latency -s bench/registry/put_existing.lua \
    "http://127.0.0.1:$PORT" -- "$size" >"$dir/puts"
  stop_daemon
  local sorted
  sorted=$(printf '%s\n' "${starts[@]}" | sort -n | sed -n 2p)
  printf 'daemon=%s limits=%s startup_ms=%s rss_mb=%s %s\n' "$name" "$size" "$sorted" "$rss" \
    "$(awk '/ 50%/ {p50=$2} / 99%/ {p99=$2} /Requests\/sec/ {rps=$2} END {printf "put_p50=%s put_p99=%s puts_per_s=%s", p50, p99, rps}' "$dir/puts")"
}

daemon_part() {
  echo "== through the daemon (PUT /v1/admin/limits, wrk -c1 $DURATION) =="
  for size in $SIZES; do
    daemon_run base "$TMP/base/build/ratelimiterd" "$size"
    daemon_run this "$ROOT/$BUILD/ratelimiterd" "$size"
  done
}

for part in $PARTS; do "${part}_part"; done
