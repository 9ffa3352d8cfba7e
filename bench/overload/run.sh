#!/usr/bin/env bash
# bench/overload/run.sh — ratelimiterd under overload: a well-behaved
# client's latency and the daemon's peak memory, first alone, then while
# attackers hold thousands of idle connections, trickle slow-loris requests,
# pin 900 kB of a 1 MB body per slow connection, send 1 MB and 4 MB bodies
# back to back and flood reserves on random unknown keys.
#
#   bench/overload/run.sh        (parameters below, from the environment)
#
# The daemon runs on core 0 with one event loop (so its share of the machine
# is the same in both runs), and the attackers (nice 10: the daemon has the
# priority) and their wrk share that core, as attack traffic shares a real
# server's CPU; the well-behaved client runs alone on core 1, so that what
# it measures is the daemon, not its own core's contention (ATTACK_CORE=1
# puts the attackers beside it instead: then the kernel's loopback work for
# their traffic delays the client's own threads and shows in its tail).
# The well-behaved client (steady.c) sends POST /v1/reserve at a fixed pace
# over keep-alive connections and times each request from when it was due.
# Peak RSS is VmHWM of /proc/<daemon>/status, read before the daemon is
# stopped (each run has its own daemon).
# Needs: cc, python3, wrk, taskset, curl.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-overload}
DURATION=${DURATION:-20}            # seconds of well-behaved load per run
WARMUP=${WARMUP:-5}                 # seconds of attack before measuring
STEADY_CONNECTIONS=${STEADY_CONNECTIONS:-8}
STEADY_RATE=${STEADY_RATE:-2000}    # well-behaved requests per second, all connections
IDLE=${IDLE:-8000}                  # idle connections (past max_connections)
SLOW=${SLOW:-1000}                  # slow-loris: headers trickled
SLOW_BODIES=${SLOW_BODIES:-100}     # slow-loris: 900 kB of a 1 MB body, then a trickle
BODIES=${BODIES:-4}                 # clients sending 1 MB / 4 MB bodies back to back
FLOOD=${FLOOD:-4}                   # wrk connections flooding random unknown keys (0: none)
MAX_CONNECTIONS=${MAX_CONNECTIONS:-4096}
IDLE_TIMEOUT_MS=${IDLE_TIMEOUT_MS:-60000}
REQUEST_TIMEOUT_MS=${REQUEST_TIMEOUT_MS:-10000}
MAX_BODY_BYTES=${MAX_BODY_BYTES:-1048576}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
ATTACK_CORE=${ATTACK_CORE:-$SERVER_CORE}

for tool in cc python3 wrk taskset curl; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing" >&2; exit 1; }
done
ulimit -n "$(ulimit -Hn)"
need=$((IDLE + SLOW + SLOW_BODIES + BODIES + FLOOD + STEADY_CONNECTIONS + 256))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
  echo "run.sh: $need descriptors needed, $(ulimit -n) allowed: lower IDLE or SLOW" >&2
  exit 1
fi

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target ratelimiterd >/dev/null
cc -O2 -Wall -Wextra -pthread bench/overload/steady.c -o "$BUILD/overload_steady"

TMP=$(mktemp -d /tmp/rl_bench_overload.XXXXXX)
DAEMON_PID=""
ATTACK_PIDS=""
cleanup() {
  for pid in $ATTACK_PIDS; do
    kill "$pid" 2>/dev/null || true
  done
  [ -n "$DAEMON_PID" ] && kill -TERM "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

cat >"$TMP/limits.json" <<'JSON'
[{"key":"steady:rpm","kind":"rolling","capacity":1000000000000,"window_seconds":1,"unit":"requests"}]
JSON
cat >"$TMP/config.yaml" <<YAML
server:
  max_connections: $MAX_CONNECTIONS
  idle_timeout_ms: $IDLE_TIMEOUT_MS
  request_timeout_ms: $REQUEST_TIMEOUT_MS
  max_body_bytes: $MAX_BODY_BYTES
memory:
  lease_memory_ms: 2000
YAML

# start_daemon NAME: its stderr goes to $TMP/NAME.log (a log of its own, so
# that the port is never read from the previous daemon's).
start_daemon() {
  LOG="$TMP/$1.log"
  taskset -c "$SERVER_CORE" "$BUILD/ratelimiterd" -c "$TMP/config.yaml" --listen 127.0.0.1:0 \
    --registry "$TMP/limits.json" --threads 1 2>"$LOG" &
  DAEMON_PID=$!
  PORT=""
  for _ in $(seq 1 200); do
    PORT=$(sed -n 's/^ratelimiterd listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$LOG" 2>/dev/null || true)
    [ -n "$PORT" ] && break
    sleep 0.05
  done
  [ -n "$PORT" ] || { echo "run.sh: ratelimiterd did not start:" >&2; cat "$LOG" >&2; exit 1; }
}

peak_rss_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$DAEMON_PID/status"; }

# The kernel's count of connections dropped because a listen backlog was
# full (system-wide: TcpExt ListenDrops).
listen_drops() {
  awk '/^TcpExt:/ { if (!n) { for (i = 1; i <= NF; i++) if ($i == "ListenDrops") c = i; n = 1 } else print $c }' \
    /proc/net/netstat
}

stop_daemon() {
  kill -TERM "$DAEMON_PID"
  local status=0
  wait "$DAEMON_PID" || status=$?
  DAEMON_PID=""
  [ "$status" = 0 ] || echo "run.sh: ratelimiterd exited with $status" >&2
}

steady() {
  taskset -c "$CLIENT_CORE" "$BUILD/overload_steady" "$PORT" "$STEADY_CONNECTIONS" "$STEADY_RATE" \
    "$DURATION" steady:rpm
}

echo "parameters: daemon on core $SERVER_CORE (1 event loop), well-behaved client on core $CLIENT_CORE, attackers on core $ATTACK_CORE (nice 10);"
echo "  config: max_connections $MAX_CONNECTIONS, idle_timeout_ms $IDLE_TIMEOUT_MS, request_timeout_ms $REQUEST_TIMEOUT_MS, max_body_bytes $MAX_BODY_BYTES"
echo "  well-behaved: $STEADY_CONNECTIONS keep-alive connections, $STEADY_RATE req/s in all, ${DURATION} s"
echo "  attackers: $IDLE idle connections, $SLOW slow-loris, $SLOW_BODIES slow 1 MB bodies, $BODIES clients of 1 MB/4 MB bodies, wrk -c$FLOOD on unknown keys; ${WARMUP} s before measuring"

# ---- alone ------------------------------------------------------------------
start_daemon alone
ALONE=$(steady)
ALONE_RSS=$(peak_rss_kb)
stop_daemon

# ---- under attack -----------------------------------------------------------
start_daemon under_attack
DROPS_BEFORE=$(listen_drops)
ATTACK_S=$((WARMUP + DURATION + 2))
# One process per kind, so that the churn of thousands of idle connections
# does not starve the others of the attackers' (niced) core.
attack() {
  local name=$1
  shift
  taskset -c "$ATTACK_CORE" nice -n 10 python3 bench/overload/attack.py "$PORT" "$ATTACK_S" "$@" \
    >"$TMP/attack_$name.json" &
  ATTACK_PIDS="$ATTACK_PIDS $!"
}
attack idle --idle "$IDLE"
attack slow --slow "$SLOW" --slow-bodies "$SLOW_BODIES"
attack bodies --bodies "$BODIES"
: >"$TMP/flood.txt"
if [ "$FLOOD" -gt 0 ]; then
  taskset -c "$ATTACK_CORE" nice -n 10 wrk -t1 -c"$FLOOD" -d"${ATTACK_S}s" \
    -s bench/overload/unknown_keys.lua "http://127.0.0.1:$PORT" >"$TMP/flood.txt" 2>&1 &
  ATTACK_PIDS="$ATTACK_PIDS $!"
fi
sleep "$WARMUP"
UNDER=$(steady)
for pid in $ATTACK_PIDS; do
  wait "$pid" || true
done
ATTACK_PIDS=""
DROPS=$(($(listen_drops) - DROPS_BEFORE))
kill -0 "$DAEMON_PID" 2>/dev/null || { echo "run.sh: the daemon died under attack" >&2; exit 1; }
HEALTH=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz" || true)
UNDER_RSS=$(peak_rss_kb)
stop_daemon

# ---- figures ------------------------------------------------------------------
field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' <<<"$2"; }
FLOOD_REQS=$(awk '/requests in/ {print $1}' "$TMP/flood.txt")
FLOOD_NON2XX=$(awk '/Non-2xx/ {print $NF}' "$TMP/flood.txt")
echo
printf "%-14s %9s %9s %7s %9s %9s %10s %9s %12s\n" run sent answered failed p50_ms p99_ms p99.9_ms max_ms peak_rss_kB
for run in alone under_attack; do
  if [ "$run" = alone ]; then line=$ALONE rss=$ALONE_RSS; else line=$UNDER rss=$UNDER_RSS; fi
  printf "%-14s %9s %9s %7s %9s %9s %10s %9s %12s\n" "$run" "$(field sent "$line")" \
    "$(field answered "$line")" "$(field failed "$line")" "$(field p50_ms "$line")" \
    "$(field p99_ms "$line")" "$(field p999_ms "$line")" "$(field max_ms "$line")" "$rss"
done
grep -o 'first_failure.*' <<<"$ALONE $UNDER" || true
echo "attackers (counts over ${ATTACK_S} s):"
for name in idle slow bodies; do
  python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
print("  " + ", ".join("%s %s" % (k, v) for k, v in sorted(c.items()) if v))' "$TMP/attack_$name.json"
done
if [ "$FLOOD" -gt 0 ]; then
  echo "unknown-key flood: ${FLOOD_REQS:-?} requests, ${FLOOD_NON2XX:-0} answered 404 (wrk's Non-2xx)"
fi
echo "connections dropped by a full listen backlog during the attack (kernel, system-wide): $DROPS"
echo "after the attack: daemon alive, GET /healthz -> $HEALTH"
echo "daemon's reports:"
grep 'since its last report' "$TMP/under_attack.log" | sed 's/^/  /' || echo "  (none)"
