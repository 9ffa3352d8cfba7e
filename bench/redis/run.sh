#!/usr/bin/env bash
# bench/redis/run.sh — ratelimiterd --backend redis over keep-alive HTTP/1.1:
# leases/s and p50/p99 with the submitter's micro-batching on, and with it off
# (max_leases_per_batch 1: one EVALSHA per request, the "naive path").
#
#   bench/redis/run.sh
#       DURATION=5s CONNECTIONS=64 BATCH_CONNECTIONS=16 THREADS="1 2"
#       FLUSH_US=200 BATCH_LEASES=1024 FLUSHES_IN_FLIGHT=2 REDIS_CONNECTIONS=4
#       by default
#   DURATION=10s bench/redis/run.sh      (the figures of docs/benchmarks.md)
#   BASE=<git revision> bench/redis/run.sh   every run followed by the same
#       run of that revision's ratelimiterd (built in a worktree), and this
#       build's leases/s as a share of BASE's: a change side by side with before
#
# The machine has 2 cores, so by default: a private redis-server alone on
# core 1 (Redis is single-threaded: one core is what "one local Redis" has);
# ratelimiterd (its event loops and the submitter) and wrk share core 0.
# CLIENT_CORE=1 puts wrk with Redis instead (the layout of earlier figures).
#
# For every daemon thread count in THREADS and every mode (batching on, off),
# a fresh ratelimiterd on a fresh (FLUSHALLed) Redis is driven by
#   wrk -t1 -c$CONNECTIONS -d$DURATION --latency -s bench/http/reserve.lua
#   wrk -t1 -c$BATCH_CONNECTIONS -d$DURATION --latency -s bench/http/reserve_batch.lua
# and the script prints leases/s (requests/s x leases per request), wrk's p50
# and p99, the CPU each process used during the run (from /proc, % of one
# core), and Redis's INFO commandstats for EVALSHA (calls, µs per call, leases
# per call, µs of Redis time per lease). Then the ratios batching-on / naive
# and the targets (>= 100k leases/s, >= 3x the naive path).
# Needs: wrk, redis-server, redis-cli, taskset, curl (and git for BASE).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
. bench/base_build.sh
BUILD=${BUILD:-build}
BASE=${BASE:-}
DURATION=${DURATION:-5s}
CONNECTIONS=${CONNECTIONS:-64}
BATCH_CONNECTIONS=${BATCH_CONNECTIONS:-16}
THREADS=${THREADS:-"1 2"}
FLUSH_US=${FLUSH_US:-200}
FLUSHES_IN_FLIGHT=${FLUSHES_IN_FLIGHT:-2}
BATCH_LEASES=${BATCH_LEASES:-1024}
REDIS_CONNECTIONS=${REDIS_CONNECTIONS:-4}
DAEMON_CORE=${DAEMON_CORE:-0}
REDIS_CORE=${REDIS_CORE:-1}
CLIENT_CORE=${CLIENT_CORE:-0}

for tool in wrk redis-server redis-cli taskset curl; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing (apt-get install wrk redis-server util-linux curl)" >&2; exit 1; }
done

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target ratelimiterd >/dev/null

TMP=$(mktemp -d /tmp/rl_bench_redis.XXXXXX)
DAEMON_PID=""
REDIS_PID=""
REDIS_PORT=""
WRK_PID=""
cleanup() {
  [ -n "$WRK_PID" ] && kill -TERM "$WRK_PID" 2>/dev/null && wait "$WRK_PID" 2>/dev/null || true
  [ -n "$DAEMON_PID" ] && kill -TERM "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null || true
  [ -n "$REDIS_PID" ] && kill -TERM "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null || true
  [ -z "$BASE" ] || base_remove "$TMP/base"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
[ -z "$BASE" ] || base_build "$BASE" "$TMP/base"

# ---- a private redis-server on a free loopback port, on REDIS_CORE ---------
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for _ in $(seq 1 50); do
  p=$((20000 + RANDOM % 20000))
  port_in_use "$p" || { REDIS_PORT=$p; break; }
done
[ -n "$REDIS_PORT" ] || { echo "run.sh: no free port for redis-server" >&2; exit 1; }
taskset -c "$REDIS_CORE" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$TMP" \
  --save '' --appendonly no --daemonize no --logfile "$TMP/redis.log" &
REDIS_PID=$!
redis() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }
for _ in $(seq 1 100); do
  grep -q "Ready to accept connections" "$TMP/redis.log" 2>/dev/null && break
  kill -0 "$REDIS_PID" 2>/dev/null || break
  sleep 0.05
done
# Make sure the server on that port is ours (never touch someone else's Redis).
if ! kill -0 "$REDIS_PID" 2>/dev/null || [ "$(redis config get dir | sed -n 2p)" != "$TMP" ]; then
  echo "run.sh: redis-server did not start on 127.0.0.1:$REDIS_PORT:" >&2
  cat "$TMP/redis.log" >&2
  exit 1
fi

# The 4 limits of the LLM lease in reserve.lua: capacities nothing reaches,
# 1-second windows and hold timeouts (the live state is about one second of
# traffic). In redis mode the daemon seeds these into the empty Redis.
cat >"$TMP/limits.json" <<'JSON'
[
 {"key":"global:llm:openai:gpt-4o:rpm","kind":"rolling","capacity":1000000000000,"window_seconds":1,"unit":"requests"},
 {"key":"global:llm:openai:gpt-4o:tpm","kind":"rolling","capacity":1000000000000000,"window_seconds":1,"unit":"tokens"},
 {"key":"global:llm:openai:gpt-4o:concurrency","kind":"concurrency","capacity":1000000000000,"timeout_seconds":1,"unit":"inflight"},
 {"key":"tenant:tenant_a:llm:daily_tokens","kind":"rolling","capacity":1000000000000000,"window_seconds":1,"unit":"tokens"}
]
JSON

# CPU ticks (user+system) of a process, and the clock tick rate.
HZ=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# wrk latency figure ("512.00us", "1.20ms", "2.00s") in ms.
to_ms() {
  awk -v v="$1" 'BEGIN {
    n = v + 0
    if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n *= 1; else if (v ~ /m$/) n *= 60000; else if (v ~ /s$/) n *= 1000
    printf "%.3f", n }'
}

# start_daemon THREADS MAX_LEASES_PER_BATCH BINARY: a fresh daemon on a flushed Redis.
start_daemon() {
  local threads=$1 per_batch=$2 binary=$3
  redis flushall >/dev/null
  cat >"$TMP/config.yaml" <<YAML
server:
  backend: "redis"
redis:
  address: "127.0.0.1:$REDIS_PORT"
  connections: $REDIS_CONNECTIONS
  key_prefix: "rlbench:"
  lease_memory_ms: 2000
  max_leases_per_batch: $per_batch
  flush_interval_us: $FLUSH_US
  flushes_in_flight: $FLUSHES_IN_FLIGHT
YAML
  : >"$TMP/daemon.log"
  taskset -c "$DAEMON_CORE" "$binary" -c "$TMP/config.yaml" --backend redis \
    --redis "127.0.0.1:$REDIS_PORT" --listen 127.0.0.1:0 --registry "$TMP/limits.json" \
    --threads "$threads" 2>"$TMP/daemon.log" &
  DAEMON_PID=$!
  PORT=""
  for _ in $(seq 1 200); do
    PORT=$(sed -n 's/^ratelimiterd listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$TMP/daemon.log")
    [ -n "$PORT" ] && break
    kill -0 "$DAEMON_PID" 2>/dev/null || break
    sleep 0.05
  done
  [ -n "$PORT" ] || { echo "run.sh: ratelimiterd did not start:" >&2; cat "$TMP/daemon.log" >&2; exit 1; }
  # One lease by hand: it must be admitted (the limits are in Redis).
  local answer
  answer=$(curl -s -X POST "http://127.0.0.1:$PORT/v1/reserve" -H 'Content-Type: application/json' \
    -d '{"lease_id":"01JBENCHCHECK0000000000000","job_id":"01JBENCHJOB0000000000000000","requirements":[{"key":"global:llm:openai:gpt-4o:rpm","amount":1}]}')
  grep -q '"allowed":true' <<<"$answer" || { echo "run.sh: check lease not admitted: $answer" >&2; cat "$TMP/daemon.log" >&2; exit 1; }
}

stop_daemon() {
  kill -TERM "$DAEMON_PID"
  wait "$DAEMON_PID" || { echo "run.sh: ratelimiterd did not stop cleanly" >&2; cat "$TMP/daemon.log" >&2; exit 1; }
  DAEMON_PID=""
}

# run_wrk LABEL SCRIPT CONNECTIONS LEASES_PER_REQUEST: one wrk run; appends a
# result line to $TMP/results:
#   label leases/s req/s p50_ms p99_ms redis% daemon% wrk% evalsha_calls usec_per_call
run_wrk() {
  local label=$1 script=$2 connections=$3 per_request=$4 out
  local r0 d0 w0 r1 d1 w1 t0 t1
  redis config resetstat >/dev/null
  r0=$(cpu_ticks "$REDIS_PID"); d0=$(cpu_ticks "$DAEMON_PID"); t0=$(date +%s.%N)
  taskset -c "$CLIENT_CORE" wrk -t1 -c"$connections" -d"$DURATION" --latency -s "$script" \
    "http://127.0.0.1:$PORT" >"$TMP/wrk.out" 2>&1 &
  WRK_PID=$!
  # wrk's own CPU: sampled just before it exits (it is reaped by wait).
  w1=0
  while kill -0 "$WRK_PID" 2>/dev/null; do
    w=$(cpu_ticks "$WRK_PID"); [ "$w" != 0 ] && w1=$w
    sleep 0.2
  done
  wait "$WRK_PID" || { WRK_PID=""; echo "run.sh: wrk failed:" >&2; cat "$TMP/wrk.out" >&2; exit 1; }
  WRK_PID=""
  r1=$(cpu_ticks "$REDIS_PID"); d1=$(cpu_ticks "$DAEMON_PID"); t1=$(date +%s.%N)
  out=$(cat "$TMP/wrk.out")
  if grep -qE "Non-2xx|Socket errors" <<<"$out"; then echo "run.sh: errors in $label:" >&2; echo "$out" >&2; fi
  local rps p50 p99 stats calls upc
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  p50=$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
  redis info commandstats | tr -d '\r' >"$TMP/commandstats"
  [ -n "${SHOW_COMMANDSTATS:-}" ] && { echo "== $label"; grep cmdstat "$TMP/commandstats"; }
  stats=$(sed -n 's/^cmdstat_evalsha://p' "$TMP/commandstats")
  calls=$(sed -n 's/^calls=\([0-9]*\),.*/\1/p' <<<"$stats")
  upc=$(sed -n 's/.*usec_per_call=\([0-9.]*\),.*/\1/p' <<<"$stats")
  awk -v l="$label" -v rps="$rps" -v n="$per_request" -v p50="$p50" -v p99="$p99" \
      -v r="$((r1 - r0))" -v d="$((d1 - d0))" -v w="$w1" -v hz="$HZ" -v t0="$t0" -v t1="$t1" \
      -v calls="${calls:-0}" -v upc="${upc:-0}" 'BEGIN {
    secs = t1 - t0
    printf "%s %.0f %.0f %s %s %.0f %.0f %.0f %d %s\n", l, rps * n, rps, p50, p99,
      100 * r / hz / secs, 100 * d / hz / secs, 100 * w / hz / secs, calls, upc }' >>"$TMP/results"
}

echo "machine: $(nproc) cores; ratelimiterd on core $DAEMON_CORE, redis-server on core $REDIS_CORE, wrk on core $CLIENT_CORE"
echo "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') on 127.0.0.1:$REDIS_PORT (no persistence), ratelimiterd --backend redis, $REDIS_CONNECTIONS Redis connections"
echo "wrk -t1 --latency -d$DURATION: reserve.lua with -c$CONNECTIONS (1 lease a request), reserve_batch.lua with -c$BATCH_CONNECTIONS (256 leases a request)"
echo "batching on: max_leases_per_batch $BATCH_LEASES, flush_interval_us $FLUSH_US, flushes_in_flight $FLUSHES_IN_FLIGHT; naive: max_leases_per_batch 1"
echo

: >"$TMP/results"
# With a BASE, each run of this build is followed by the same run of BASE's
# ("t1base" rows).
BUILDS="t:$BUILD/ratelimiterd"
[ -z "$BASE" ] || BUILDS="$BUILDS tbase:$TMP/base/build/ratelimiterd"
for threads in $THREADS; do
  for mode in on naive; do
    if [ "$mode" = on ]; then per_batch=$BATCH_LEASES; else per_batch=1; fi
    for build in $BUILDS; do
      name=${build%%:*}
      start_daemon "$threads" "$per_batch" "${build#*:}"
      label="${name%base}$threads${name#t}"
      run_wrk "$label:$mode:single" "$ROOT/bench/http/reserve.lua" "$CONNECTIONS" 1
      run_wrk "$label:$mode:batch256" "$ROOT/bench/http/reserve_batch.lua" "$BATCH_CONNECTIONS" 256
      stop_daemon
    done
  done
done

DSECS=$(awk -v d="$DURATION" 'BEGIN { n = d + 0; if (d ~ /m$/) n *= 60; else if (d ~ /h$/) n *= 3600; print n }')
awk -v secs="$DSECS" '
{ row[NR] = $0; split($1, k, ":"); key = k[1] ":" k[3]
  if (!(key in seen)) { seen[key] = 1; order[++nkeys] = key }
  if (k[2] == "on") on[key] = $2; else naive[key] = $2 }
END {
  printf "%-4s %-6s %-9s %10s %9s %8s %8s %7s %7s %5s %9s %7s %8s %8s\n", "thr", "mode", "endpoint",
    "leases/s", "req/s", "p50 ms", "p99 ms", "redis%", "rlimd%", "wrk%", "evalsha", "us/call", "lease/cl", "us/lease"
  for (i = 1; i <= NR; i++) {
    split(row[i], f, " "); split(f[1], k, ":")
    lpc = (f[9] > 0) ? f[2] * secs / f[9] : 0         # leases per EVALSHA
    upl = (lpc > 0) ? f[10] / lpc : 0                  # Redis us per lease
    printf "%-4s %-6s %-9s %10d %9d %8.3f %8.3f %7d %7d %5d %9d %7.1f %8.1f %8.2f\n", k[1], k[2], k[3],
      f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], lpc, upl
  }
  print ""
  best = 0
  for (j = 1; j <= nkeys; j++) {
    key = order[j]; split(key, k, ":")
    printf "%s %-9s batching on / naive: %8d / %8d leases/s = %.2fx\n", k[1], k[2], on[key], naive[key],
      (naive[key] > 0) ? on[key] / naive[key] : 0
  }
  print ""
  # The target: >= 100k leases/s through micro-batching, >= 3x one script call per request.
  # /v1/reserve (one lease a request) is batched by the submitter alone;
  # batch requests are merged by it too (~1000 leases a script call).
  for (j = 1; j <= nkeys; j++) {
    key = order[j]; split(key, k, ":")
    if (k[2] == "single")
      printf "target %s /v1/reserve: %d leases/s vs 100000 (%s, %.0f%%); %.2fx naive vs 3x (%s)\n", k[1], on[key],
        (on[key] >= 100000) ? "met" : "missed", 100 * on[key] / 100000,
        (naive[key] > 0) ? on[key] / naive[key] : 0, (naive[key] > 0 && on[key] >= 3 * naive[key]) ? "met" : "missed"
    else
      printf "target %s batch256:    %d leases/s vs 100000 (%s, %.0f%%)\n", k[1], on[key],
        (on[key] >= 100000) ? "met" : "missed", 100 * on[key] / 100000
  }
}' "$TMP/results"
echo
echo "columns: redis%/rlimd%/wrk% = CPU of redis-server/ratelimiterd/wrk during the run (% of one core);"
echo "evalsha = script calls in the run (INFO commandstats); us/call = Redis time per call;"
echo "lease/cl = leases per call; us/lease = Redis time per lease (wall time in the script: it"
echo "includes time Redis waits for its core when it shares one)."
echo "cores: ratelimiterd $DAEMON_CORE, redis-server $REDIS_CORE, wrk $CLIENT_CORE."
if [ -n "$BASE" ]; then
  echo
  echo "side by side with BASE $BASE (each run followed by BASE's):"
  awk '{ split($1, k, ":"); t = k[1]; b = (t ~ /base$/); sub(/base$/, "", t); key = t ":" k[2] ":" k[3]
         if (b) base[key] = $2; else { cur[key] = $2; order[++n] = key } }
       END { for (i = 1; i <= n; i++) { key = order[i]
               printf "  %-20s %9d vs %9d leases/s = %.1f %%\n", key, cur[key], base[key],
                 (base[key] > 0) ? 100 * cur[key] / base[key] : 0 } }' "$TMP/results"
fi
