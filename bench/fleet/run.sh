#!/usr/bin/env bash
# bench/fleet/run.sh — a fleet of ratelimiterd --backend redis daemons sharing
# one Redis, each in a simulated region: it reaches Redis through its own
# bench/fleet/delay_proxy, which delays every byte by RTT/2 each way.
#
#   bench/fleet/run.sh
#       DURATION=10s LATENCY_DURATION=10s EXHAUST_DURATION=5s WARMUP=2s RTTS="0 10 50"
#       DAEMONS=3 CONNECTIONS=64 LATENCY_RATE=2000 LATENCY_CONNECTIONS=LATENCY_RATE/4
#       EXHAUST_CAPACITY=5000 ROUNDS=1 ALLOTMENTS=both   by default
#   DURATION=3s WARMUP=1s LATENCY_DURATION=3s EXHAUST_DURATION=3s RTTS=50 bench/fleet/run.sh
#       (a quick look)
#
# ALLOTMENTS=both runs every RTT with allotments off (the synchronous path:
# every lease a script call) and on (--allotments: leases decided from what
# Redis set aside for each daemon), side by side; on or off runs one of them.
# For every RTT (ms) in RTTS and every mode, three phases, each on a
# FLUSHALLed Redis with freshly started daemons (each --threads 1, its own
# registry copy):
#  1. load: the 4 limits of bench/http/reserve.lua's lease with capacities
#     nothing reaches; one wrk per daemon, all at once, WARMUP unmeasured then
#       wrk -t1 -c$CONNECTIONS -d$DURATION --latency -s bench/http/reserve.lua
#     (lease ids seeded from /dev/urandom: they differ between the wrks)
#     gives leases/s per daemon (every answer is an admission: nothing is near
#     its capacity) and wrk's p50/p99, and Redis's INFO commandstats and INFO
#     cpu deltas give script calls (EVALSHA) and Redis CPU µs per admitted
#     lease (user+sys of redis-server, all its commands and its networking),
#     and the script's own µs per lease (commandstats). wrk's latency is that
#     of a closed loop of 64 connections on a core shared by the daemons and
#     the wrks: mostly queueing (latency = connections / throughput), not the
#     time a decision takes; hence:
#  2. latency: the same limits; one bench/overload/steady client per daemon,
#     all at once, sending the same lease (the requirements of
#     bench/http/reserve.lua, a fresh ULID lease id per request, ids distinct
#     across processes) at LATENCY_RATE a second per daemon over
#     LATENCY_CONNECTIONS keep-alive connections, each request timed from
#     when it was due (no coordinated omission); WARMUP at the same pace
#     unmeasured, then LATENCY_DURATION: reserve p50/p99/p99.9/max per daemon,
#     and Redis CPU per lease at that pace. Each connection sends every
#     LATENCY_CONNECTIONS / LATENCY_RATE s, 250 ms by default: longer than
#     the synchronous path's slowest answers at 50 ms RTT (~220 ms at
#     2,000/s), so that a request does not wait for its connection to be
#     free (it would still be timed from when it was due).
#  3. exhaustion: the same lease, but its rpm limit is a rolling limit of
#     EXHAUST_CAPACITY requests over a 1-hour window, so the fleet exhausts it
#     and nothing comes back during the run; one wrk per daemon with
#     bench/fleet/reserve_count.lua (counts answers "allowed":true) for
#     EXHAUST_DURATION. over-admissions = admitted (summed over the wrks) -
#     capacity, if positive: must be 0. stranded = capacity - admitted once
#     every daemon denies (units the fleet holds back while it says no: held in
#     allotments); the synchronous path holds nothing outside Redis, so 0. The
#     limit's own "used" (from Redis, GET /v1/admin/limits/KEY) is printed beside.
# With allotments each daemon prints at exit how many leases it decided
# locally and how many it forwarded to Redis (the synchronous path); that
# count covers the daemon's whole life, so the warm-up's leases (the first
# leases of every key go to Redis) are in it: the script reports it per phase,
# labelled so, not as the measured part alone.
# ROUNDS > 1 repeats everything and reports the median of each figure (the
# worst round for over-admissions and stranded capacity). Exits 1 if the fleet
# ever admitted more than the capacity.
#
# Layout on the 2-core VM: redis-server alone on core 1 (Redis runs scripts on
# one thread: one core is what "one Redis" has); the daemons, the wrks, the
# latency clients and the proxies on core 0 (REDIS_CORE, DAEMON_CORE,
# CLIENT_CORE, LATENCY_CORE, PROXY_CORE). The proxies cost little (~5 % of a
# core at RTT 0), and putting them or wrk on core 1 moved the RTT 0 figures
# less than run-to-run noise. From 10 ms on the round trip is what limits the
# synchronous path, not a core.
# bench/fleet/single.sh compares one daemon with allotments against the
# memory backend (the issue's third target).
# Needs: wrk, redis-server, redis-cli, taskset, curl, cmake, cc (it builds
# ratelimiterd and delay_proxy, and bench/overload/steady.c with cc, into
# BUILD, default build).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${BUILD:-build}
DURATION=${DURATION:-10s}
LATENCY_DURATION=${LATENCY_DURATION:-10s}
EXHAUST_DURATION=${EXHAUST_DURATION:-5s}
WARMUP=${WARMUP:-2s}
RTTS=${RTTS:-"0 10 50"}
DAEMONS=${DAEMONS:-3}
CONNECTIONS=${CONNECTIONS:-64}
LATENCY_RATE=${LATENCY_RATE:-2000}
LATENCY_CONNECTIONS=${LATENCY_CONNECTIONS:-$(((LATENCY_RATE + 3) / 4))}
EXHAUST_CAPACITY=${EXHAUST_CAPACITY:-5000}
ROUNDS=${ROUNDS:-1}
ALLOTMENTS=${ALLOTMENTS:-both}
REDIS_CORE=${REDIS_CORE:-1}
DAEMON_CORE=${DAEMON_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-0}
LATENCY_CORE=${LATENCY_CORE:-$CLIENT_CORE}
PROXY_CORE=${PROXY_CORE:-0}

for tool in wrk redis-server redis-cli taskset curl cmake cc; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing (apt-get install wrk redis-server util-linux curl cmake gcc)" >&2; exit 1; }
done
case "$ALLOTMENTS" in
  both) MODES="off on" ;;
  on | off) MODES=$ALLOTMENTS ;;
  *) echo "run.sh: ALLOTMENTS is both, on or off, not $ALLOTMENTS" >&2; exit 2 ;;
esac

# A wrk duration ("10s", "1m", "0") in seconds.
secs() {
  awk -v v="$1" 'BEGIN {
    n = v + 0
    if (v ~ /ms$/) n /= 1000; else if (v ~ /m$/) n *= 60; else if (v ~ /h$/) n *= 3600
    print n }'
}
WARMUP_S=$(secs "$WARMUP")
LATENCY_S=$(secs "$LATENCY_DURATION")

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target ratelimiterd delay_proxy >/dev/null
cc -O2 -Wall -Wextra -pthread bench/overload/steady.c -o "$BUILD/steady"
# The latency clients' lease: reserve.lua's requirements, as they are there.
REQUIREMENTS="[$(grep -o '{"key":"[^}]*}' bench/http/reserve.lua | paste -sd, -)]"
[ "$REQUIREMENTS" != "[]" ] || { echo "run.sh: no requirements found in bench/http/reserve.lua" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/rl_bench_fleet.XXXXXX")
REDIS_PID=""
DAEMON_PIDS=()
DAEMON_PORTS=()
PROXY_PIDS=()
PROXY_PORTS=()
CLIENT_PIDS=()
# alive PID: running (a child that exited stays a zombie until reaped).
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ -n "$state" ] && [ "$state" != Z ]
}
stop_pids() { # SIGNAL PID...: each signalled, given 10 s, then killed; all reaped, quietly
  local sig=$1 pid any
  shift
  [ $# -gt 0 ] || return 0
  for pid in "$@"; do kill "-$sig" "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 100); do
    any=""
    for pid in "$@"; do alive "$pid" && { any=1; break; }; done
    [ -n "$any" ] || break
    sleep 0.1
  done
  for pid in "$@"; do if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi; done
  for pid in "$@"; do wait "$pid" 2>/dev/null || true; done
}
# Clients first, then the daemons (they give back their allotments through
# the proxies), then the proxies and Redis.
cleanup() {
  trap '' INT TERM HUP PIPE
  stop_pids TERM "${CLIENT_PIDS[@]}"
  stop_pids TERM "${DAEMON_PIDS[@]}"
  stop_pids TERM "${PROXY_PIDS[@]}"
  stop_pids TERM $REDIS_PID
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'exit 129' HUP
trap 'exit 141' PIPE

# ---- a private redis-server on a free loopback port, on REDIS_CORE ---------
# Ports below the kernel's ephemeral range (32768-60999 by default): one
# there may be the local end of some connection, free to connect to yet not
# to bind. Another port if redis-server still cannot bind (taken meanwhile).
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
redis() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }
for _ in $(seq 1 10); do
  REDIS_PORT=""
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 12000))
    port_in_use "$p" || { REDIS_PORT=$p; break; }
  done
  [ -n "$REDIS_PORT" ] || { echo "run.sh: no free port for redis-server" >&2; exit 1; }
  taskset -c "$REDIS_CORE" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$TMP" \
    --save '' --appendonly no --daemonize no --logfile "$TMP/redis.log" &
  REDIS_PID=$!
  for _ in $(seq 1 100); do
    grep -q "Ready to accept connections" "$TMP/redis.log" 2>/dev/null && break
    kill -0 "$REDIS_PID" 2>/dev/null || break
    sleep 0.05
  done
  kill -0 "$REDIS_PID" 2>/dev/null && break
  wait "$REDIS_PID" 2>/dev/null || true
  REDIS_PID=""
  grep -q "Address already in use" "$TMP/redis.log" || break
  rm -f "$TMP/redis.log"
done
# Make sure the server on that port is ours (never touch someone else's Redis).
if [ -z "$REDIS_PID" ] || ! kill -0 "$REDIS_PID" 2>/dev/null || [ "$(redis config get dir | sed -n 2p)" != "$TMP" ]; then
  echo "run.sh: redis-server did not start on 127.0.0.1:$REDIS_PORT:" >&2
  cat "$TMP/redis.log" >&2 || true
  exit 1
fi

# The 4 limits of reserve.lua's lease. "load": capacities nothing reaches,
# 1-second windows and hold timeouts (the live state is about one second of
# traffic, as in bench/redis). "exhaust": the rpm limit holds
# EXHAUST_CAPACITY requests for an hour, so it runs out and stays out.
write_limits() { # FILE RPM_CAPACITY RPM_WINDOW_SECONDS
  cat >"$1" <<JSON
[
 {"key":"global:llm:openai:gpt-4o:rpm","kind":"rolling","capacity":$2,"window_seconds":$3,"unit":"requests"},
 {"key":"global:llm:openai:gpt-4o:tpm","kind":"rolling","capacity":1000000000000000,"window_seconds":1,"unit":"tokens"},
 {"key":"global:llm:openai:gpt-4o:concurrency","kind":"concurrency","capacity":1000000000000,"timeout_seconds":1,"unit":"inflight"},
 {"key":"tenant:tenant_a:llm:daily_tokens","kind":"rolling","capacity":1000000000000000,"window_seconds":1,"unit":"tokens"}
]
JSON
}
write_limits "$TMP/limits-load.json" 1000000000000 1
write_limits "$TMP/limits-exhaust.json" "$EXHAUST_CAPACITY" 3600
RPM_KEY="global:llm:openai:gpt-4o:rpm"

HZ=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
sum_ticks() { local t=0 pid; for pid in "$@"; do t=$((t + $(cpu_ticks "$pid"))); done; echo "$t"; }
# Redis's own CPU seconds (user + sys, all threads), from INFO cpu.
redis_cpu_s() { redis info cpu | tr -d '\r' | awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%.6f", s}'; }

# wrk latency figure ("512.00us", "1.20ms", "2.00s") in ms.
to_ms() {
  awk -v v="$1" 'BEGIN {
    n = v + 0
    if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n *= 1; else if (v ~ /m$/) n *= 60000; else if (v ~ /s$/) n *= 1000
    printf "%.3f", n }'
}

# ---- the proxies: one per daemon, each delay_ms = RTT/2 -----------------------
start_proxies() { # RTT_MS
  local rtt=$1 i port
  PROXY_PIDS=()
  PROXY_PORTS=()
  for i in $(seq 1 "$DAEMONS"); do
    taskset -c "$PROXY_CORE" "$BUILD/delay_proxy" --listen 127.0.0.1:0 --upstream "127.0.0.1:$REDIS_PORT" \
      --delay-ms $((rtt / 2)) 2>"$TMP/proxy$i.log" &
    PROXY_PIDS+=($!)
    port=""
    for _ in $(seq 1 100); do
      port=$(sed -n 's/^delay_proxy listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$TMP/proxy$i.log")
      [ -n "$port" ] && break
      sleep 0.02
    done
    [ -n "$port" ] || { echo "run.sh: delay_proxy did not start:" >&2; cat "$TMP/proxy$i.log" >&2; exit 1; }
    PROXY_PORTS+=("$port")
  done
}

stop_proxies() {
  stop_pids TERM "${PROXY_PIDS[@]}"
  PROXY_PIDS=()
}

# ---- the daemons: a fresh fleet on a flushed Redis -----------------------------
# One after the other: the first seeds the limits of its registry into the
# empty Redis, the next ones find them there (each keeps its own registry copy).
start_daemons() { # LIMITS_FILE MODE
  local limits=$1 mode=$2 i port flags=()
  [ "$mode" = on ] && flags=(--allotments)
  redis flushall >/dev/null
  DAEMON_PIDS=()
  DAEMON_PORTS=()
  for i in $(seq 1 "$DAEMONS"); do
    mkdir -p "$TMP/d$i"
    cp "$limits" "$TMP/d$i/limits.json"
    cat >"$TMP/d$i/config.yaml" <<YAML
server:
  backend: "redis"
redis:
  address: "127.0.0.1:${PROXY_PORTS[$((i - 1))]}"
  connections: 4
  key_prefix: "rlfleet:"
  lease_memory_ms: 2000
  max_leases_per_batch: 1024
  flush_interval_us: 200
  flushes_in_flight: 2
YAML
    taskset -c "$DAEMON_CORE" "$BUILD/ratelimiterd" -c "$TMP/d$i/config.yaml" --listen 127.0.0.1:0 \
      --registry "$TMP/d$i/limits.json" --threads 1 "${flags[@]}" 2>"$TMP/d$i/daemon.log" &
    DAEMON_PIDS+=($!)
    port=""
    for _ in $(seq 1 200); do
      port=$(sed -n 's/^ratelimiterd listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$TMP/d$i/daemon.log")
      [ -n "$port" ] && break
      kill -0 "${DAEMON_PIDS[-1]}" 2>/dev/null || break
      sleep 0.05
    done
    [ -n "$port" ] || { echo "run.sh: ratelimiterd $i did not start:" >&2; cat "$TMP/d$i/daemon.log" >&2; exit 1; }
    DAEMON_PORTS+=("$port")
    # It must know the limit (from Redis): not a lease, which would spend capacity.
    curl -sf -o /dev/null "http://127.0.0.1:$port/v1/admin/limits/$RPM_KEY" ||
      { echo "run.sh: ratelimiterd $i does not know $RPM_KEY:" >&2; cat "$TMP/d$i/daemon.log" >&2; exit 1; }
  done
}

# stop_daemons KEY_PREFIX: each daemon's allotment line (leases decided
# locally and by Redis over its whole life) kept as KEY_PREFIX:local:i and
# KEY_PREFIX:forwarded:i.
stop_daemons() {
  local prefix=$1 pid i=0 failed="" line
  for pid in "${DAEMON_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${DAEMON_PIDS[@]}"; do
    i=$((i + 1))
    wait "$pid" || failed="$failed $i"
  done
  DAEMON_PIDS=()
  for i in $(seq 1 "$DAEMONS"); do
    line=$(sed -n 's/^ratelimiterd: allotments: \([0-9]*\) leases decided locally, \([0-9]*\) by Redis.*/\1 \2/p' \
      "$TMP/d$i/daemon.log")
    [ -z "$line" ] || {
      result "$prefix:local:$i" "${line% *}"
      result "$prefix:forwarded:$i" "${line#* }"
      result "$prefix:leases:$i" $((${line% *} + ${line#* }))
    }
  done
  [ -z "$failed" ] || {
    for i in $failed; do echo "run.sh: ratelimiterd $i did not stop cleanly:" >&2; cat "$TMP/d$i/daemon.log" >&2; done
    exit 1
  }
}

# field NAME LINE: the word after NAME in LINE (steady's output).
field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' <<<"$2"; }

# wait_clients NAME: waits for CLIENT_PIDS; exits if one failed (its output shown).
wait_clients() {
  local name=$1 pid i=0 failed=""
  for pid in "${CLIENT_PIDS[@]}"; do
    i=$((i + 1))
    wait "$pid" || failed="$failed $i"
  done
  CLIENT_PIDS=()
  [ -z "$failed" ] || { echo "run.sh: $name failed (daemons$failed):" >&2; cat "$TMP"/"$name"*.out >&2; exit 1; }
}

# run_wrks SCRIPT DURATION: one wrk per daemon, all at once; output in $TMP/wrk$i.out.
run_wrks() {
  local script=$1 duration=$2 i
  CLIENT_PIDS=()
  for i in $(seq 1 "$DAEMONS"); do
    taskset -c "$CLIENT_CORE" wrk -t1 -c"$CONNECTIONS" -d"$duration" --latency -s "$script" \
      "http://127.0.0.1:${DAEMON_PORTS[$((i - 1))]}" >"$TMP/wrk$i.out" 2>&1 &
    CLIENT_PIDS+=($!)
  done
  wait_clients wrk
}

# Results: "KEY VALUE" lines, KEY = rtt:mode:metric[:daemon]; medians over rounds.
: >"$TMP/results"
result() { echo "$1 $2" >>"$TMP/results"; }

# phase_load RTT MODE: leases/s, wrk's latency, Redis calls and CPU per lease.
phase_load() {
  local rtt=$1 mode=$2 k="$1:$2" i out rps p50 p99 requests total=0 r0 r1 d0 d1 p0 p1 t0 t1 stats calls script_us all_calls
  start_daemons "$TMP/limits-load.json" "$mode"
  # The same load for WARMUP first, not measured: the fleet far from
  # exhaustion in its steady state (with allotments: each daemon's allotments
  # carved and sized to its demand; the first leases of a key go to Redis).
  [ "$WARMUP_S" = 0 ] || run_wrks "$ROOT/bench/http/reserve.lua" "$WARMUP"
  redis config resetstat >/dev/null
  r0=$(redis_cpu_s); d0=$(sum_ticks "${DAEMON_PIDS[@]}"); p0=$(sum_ticks "${PROXY_PIDS[@]}"); t0=$(date +%s.%N)
  run_wrks "$ROOT/bench/http/reserve.lua" "$DURATION"
  r1=$(redis_cpu_s); d1=$(sum_ticks "${DAEMON_PIDS[@]}"); p1=$(sum_ticks "${PROXY_PIDS[@]}"); t1=$(date +%s.%N)
  redis info commandstats | tr -d '\r' >"$TMP/commandstats"
  for i in $(seq 1 "$DAEMONS"); do
    out=$(cat "$TMP/wrk$i.out")
    if grep -qE "Non-2xx|Socket errors" <<<"$out"; then echo "run.sh: errors at RTT $rtt ms, allotments $mode, daemon $i:" >&2; echo "$out" >&2; fi
    rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
    p50=$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")
    p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
    requests=$(awk '/requests in/ {print $1}' <<<"$out")
    result "$k:leases_s:$i" "$rps"
    result "$k:p50_ms:$i" "$p50"
    result "$k:p99_ms:$i" "$p99"
    total=$((total + requests))
  done
  stats=$(sed -n 's/^cmdstat_evalsha://p' "$TMP/commandstats")
  calls=$(sed -n 's/^calls=\([0-9]*\),.*/\1/p' <<<"$stats")
  script_us=$(sed -n 's/.*,usec=\([0-9]*\),.*/\1/p' <<<"$stats")
  # Every command the fleet sent (the script's own INFO and CONFIG aside).
  all_calls=$(awk -F'[:=,]' '/^cmdstat_/ && $1 !~ /cmdstat_(info|config)/ {s += $3} END {print s + 0}' "$TMP/commandstats")
  awk -v n="$total" -v calls="${calls:-0}" -v all="$all_calls" -v sus="${script_us:-0}" -v r0="$r0" -v r1="$r1" \
      -v d="$((d1 - d0))" -v p="$((p1 - p0))" -v hz="$HZ" -v t0="$t0" -v t1="$t1" -v k="$k" 'BEGIN {
    secs = t1 - t0
    printf "%s:leases_s_total %.0f\n", k, n / secs
    printf "%s:script_calls_per_lease %.4f\n", k, n ? calls / n : 0
    printf "%s:redis_calls_per_lease %.4f\n", k, n ? all / n : 0
    printf "%s:redis_cpu_us_per_lease %.2f\n", k, n ? (r1 - r0) * 1e6 / n : 0
    printf "%s:script_us_per_lease %.2f\n", k, n ? sus / n : 0
    printf "%s:redis_cpu_pct %.0f\n", k, 100 * (r1 - r0) / secs
    printf "%s:daemons_cpu_pct %.0f\n", k, 100 * d / hz / secs
    printf "%s:proxies_cpu_pct %.0f\n", k, 100 * p / hz / secs
  }' >>"$TMP/results"
  stop_daemons "$k:load"
}

# phase_latency RTT MODE: reserve latency at a fixed pace, per daemon.
phase_latency() {
  local rtt=$1 mode=$2 k="$1:$2" i m line r0 r1 answered=0 calls stats slow=()
  # Answers slower than the round trip went to Redis (or stalled as long):
  # the measured part's forwarded leases, with allotments.
  [ "$rtt" -eq 0 ] || slow=(--slow-ms "$rtt")
  start_daemons "$TMP/limits-load.json" "$mode"
  CLIENT_PIDS=()
  for i in $(seq 1 "$DAEMONS"); do
    taskset -c "$LATENCY_CORE" "$BUILD/steady" --requirements "$REQUIREMENTS" --warmup "$WARMUP_S" "${slow[@]}" \
      "${DAEMON_PORTS[$((i - 1))]}" "$LATENCY_CONNECTIONS" "$LATENCY_RATE" "$LATENCY_S" >"$TMP/steady$i.out" 2>&1 &
    CLIENT_PIDS+=($!)
  done
  # Redis's figures over the measured part (the clients' warm-up ends WARMUP
  # after they start, within a few ms of one another).
  sleep "$WARMUP_S"
  redis config resetstat >/dev/null
  r0=$(redis_cpu_s)
  wait_clients steady
  r1=$(redis_cpu_s)
  redis info commandstats | tr -d '\r' >"$TMP/commandstats"
  for i in $(seq 1 "$DAEMONS"); do
    line=$(cat "$TMP/steady$i.out")
    [ -n "$(field p99_ms "$line")" ] || { echo "run.sh: no figures from the latency client of daemon $i:" >&2; echo "$line" >&2; exit 1; }
    [ "$(field failed "$line")" = 0 ] && [ "$(field denied "$line")" = 0 ] ||
      echo "run.sh: RTT $rtt ms, allotments $mode, daemon $i (latency): $line" >&2
    for m in sent failed denied p50_ms p99_ms p999_ms max_ms slow; do
      [ -z "$(field "$m" "$line")" ] || result "$k:lat_$m:$i" "$(field "$m" "$line")"
    done
    answered=$((answered + $(field answered "$line")))
  done
  # The worst daemon's figure, per round (the table's columns).
  for m in p50_ms p99_ms p999_ms max_ms; do
    result "$k:lat_worst_$m" "$(for i in $(seq 1 "$DAEMONS"); do field "$m" "$(cat "$TMP/steady$i.out")"; done | sort -g | tail -1)"
  done
  stats=$(sed -n 's/^cmdstat_evalsha://p' "$TMP/commandstats")
  calls=$(sed -n 's/^calls=\([0-9]*\),.*/\1/p' <<<"$stats")
  awk -v n="$answered" -v calls="${calls:-0}" -v r0="$r0" -v r1="$r1" -v k="$k" 'BEGIN {
    printf "%s:lat_script_calls_per_lease %.4f\n", k, n ? calls / n : 0
    printf "%s:lat_redis_cpu_us_per_lease %.2f\n", k, n ? (r1 - r0) * 1e6 / n : 0
  }' >>"$TMP/results"
  stop_daemons "$k:latency"
}

# phase_exhaust RTT MODE: the fleet against a limit it exhausts; admitted vs capacity.
phase_exhaust() {
  local rtt=$1 mode=$2 k="$1:$2" i out line admitted=0 denied=0 other=0 a d used
  start_daemons "$TMP/limits-exhaust.json" "$mode"
  run_wrks "$ROOT/bench/fleet/reserve_count.lua" "$EXHAUST_DURATION"
  for i in $(seq 1 "$DAEMONS"); do
    out=$(cat "$TMP/wrk$i.out")
    # A request wrk gave up on (timeout) may have been admitted all the same:
    # the count would then be short.
    if grep -q "Socket errors" <<<"$out"; then echo "run.sh: socket errors at RTT $rtt ms, allotments $mode, daemon $i (exhaustion):" >&2; echo "$out" >&2; fi
    line=$(grep '^fleet_count ' <<<"$out") || { echo "run.sh: no count from wrk $i:" >&2; echo "$out" >&2; exit 1; }
    a=$(sed -n 's/.*admitted=\([0-9]*\).*/\1/p' <<<"$line")
    d=$(sed -n 's/.*denied=\([0-9]*\).*/\1/p' <<<"$line")
    admitted=$((admitted + a))
    denied=$((denied + d))
    other=$((other + $(sed -n 's/.*other=\([0-9]*\).*/\1/p' <<<"$line")))
    result "$k:admitted:$i" "$a"
    # Stranded capacity is measured once every daemon says no.
    [ "$d" -gt 0 ] || echo "run.sh: RTT $rtt ms, allotments $mode: daemon $i denied nothing (the limit not exhausted there): raise EXHAUST_DURATION or lower EXHAUST_CAPACITY" >&2
  done
  used=$(curl -sf "http://127.0.0.1:${DAEMON_PORTS[0]}/v1/admin/limits/$RPM_KEY" |
    sed -n 's/.*"usage":{[^}]*"used":\([0-9]*\).*/\1/p')
  [ "$other" -eq 0 ] || echo "run.sh: RTT $rtt ms, allotments $mode: $other answers neither admitted nor denied (errors)" >&2
  # Synchronously, Redis counts exactly what was admitted (with allotments it
  # also counts what the daemons hold).
  [ "$mode" = on ] || [ "${used:-0}" -eq "$admitted" ] ||
    echo "run.sh: RTT $rtt ms: Redis counts $used used, the wrks $admitted admitted" >&2
  result "$k:admitted" "$admitted"
  result "$k:denied" "$denied"
  result "$k:used" "${used:-0}"
  result "$k:over" $((admitted > EXHAUST_CAPACITY ? admitted - EXHAUST_CAPACITY : 0))
  # Meaningful once every daemon denies (denied > 0 above, and the run lasts
  # well past exhaustion): what the fleet still holds back.
  result "$k:stranded" $((admitted < EXHAUST_CAPACITY ? EXHAUST_CAPACITY - admitted : 0))
  stop_daemons "$k:exhaust"
}

echo "machine: $(nproc) cores; redis-server on core $REDIS_CORE; $DAEMONS ratelimiterd (--threads 1) on core $DAEMON_CORE, their delay_proxies on core $PROXY_CORE, wrk on core $CLIENT_CORE, latency clients on core $LATENCY_CORE"
echo "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') (no persistence); allotments: $MODES; submitter: 4 Redis connections, max_leases_per_batch 1024, flush_interval_us 200, flushes_in_flight 2"
echo "load: wrk -t1 -c$CONNECTIONS --latency -s bench/http/reserve.lua against each daemon at once, $WARMUP unmeasured then $DURATION"
echo "latency: bench/overload/steady.c, reserve.lua's lease at $LATENCY_RATE/s per daemon over $LATENCY_CONNECTIONS connections, each daemon at once, $WARMUP unmeasured then $LATENCY_DURATION"
echo "exhaustion: rpm = $EXHAUST_CAPACITY requests / 1 h; wrk -t1 -c$CONNECTIONS -d$EXHAUST_DURATION -s bench/fleet/reserve_count.lua against each daemon at once"
echo

for round in $(seq 1 "$ROUNDS"); do
  for rtt in $RTTS; do
    start_proxies "$rtt"
    for mode in $MODES; do
      phase_load "$rtt" "$mode"
      [ "$LATENCY_S" = 0 ] || phase_latency "$rtt" "$mode"
      phase_exhaust "$rtt" "$mode"
      echo "round $round, RTT $rtt ms, allotments $mode: done" >&2
    done
    stop_proxies
  done
done

# ---- the table (medians over rounds) ---------------------------------------
max_of() { # KEY: over-admissions and stranded capacity are worst cases
  awk -v k="$1" '$1 == k {if (n++ == 0 || $2 > m) m = $2} END {print n ? m : "-"}' "$TMP/results"
}
median_of() { # KEY
  awk -v k="$1" '$1 == k {print $2}' "$TMP/results" | sort -g |
    awk '{v[NR] = $1} END {if (NR == 0) print "-"; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
fmt() { # FORMAT VALUE: "-" stays "-"
  if [ "$2" = - ]; then echo -; else printf "$1" "$2"; fi
}
per_daemon() { # KEY METRIC FORMAT: "a / b / c"
  local k=$1 metric=$2 f=$3 i s=""
  for i in $(seq 1 "$DAEMONS"); do
    s="$s${s:+ / }$(fmt "$f" "$(median_of "$k:$metric:$i")")"
  done
  echo "$s"
}
worst_daemon() { # KEY METRIC: the largest of the daemons' medians
  local i
  for i in $(seq 1 "$DAEMONS"); do median_of "$1:$2:$i"; done |
    awk '$1 != "-" {if (n++ == 0 || $1 + 0 > m) m = $1 + 0} END {print n ? m : "-"}'
}
# Forwarded share of a phase's leases, all daemons: "1.43 %", or "-" (allotments off).
forwarded_pct() { # KEY_PREFIX (rtt:mode:phase)
  local i l=0 f=0 vl vf
  for i in $(seq 1 "$DAEMONS"); do
    vl=$(median_of "$1:local:$i")
    vf=$(median_of "$1:forwarded:$i")
    [ "$vl" = - ] && { echo -; return; }
    l=$(awk -v a="$l" -v b="$vl" 'BEGIN {print a + b}')
    f=$(awk -v a="$f" -v b="$vf" 'BEGIN {print a + b}')
  done
  awk -v l="$l" -v f="$f" 'BEGIN {printf "%.2f", (l + f) ? 100 * f / (l + f) : 0}'
}
[ "$ROUNDS" -eq 1 ] || echo "medians of $ROUNDS rounds (over and stranded: the worst round)"
printf "%-6s | %-5s | %8s | %8s | %8s | %8s | %8s | %8s | %-24s | %8s | %8s | %8s | %7s | %10s | %4s | %8s\n" \
  "RTT ms" allot "p50 ms" "p99 ms" "p99.9 ms" "max ms" "wrk p50" "wrk p99" "leases/s (each)" leases/s \
  calls/l "cpu us/l" "fwd %" admitted over stranded
for rtt in $RTTS; do
  for mode in $MODES; do
    k="$rtt:$mode"
    printf "%-6s | %-5s | %8s | %8s | %8s | %8s | %8s | %8s | %-24s | %8s | %8s | %8s | %7s | %10s | %4s | %8s\n" \
      "$rtt" "$mode" "$(fmt %.2f "$(median_of "$k:lat_worst_p50_ms")")" "$(fmt %.2f "$(median_of "$k:lat_worst_p99_ms")")" \
      "$(fmt %.2f "$(median_of "$k:lat_worst_p999_ms")")" "$(fmt %.2f "$(median_of "$k:lat_worst_max_ms")")" \
      "$(fmt %.2f "$(worst_daemon "$k" p50_ms)")" "$(fmt %.2f "$(worst_daemon "$k" p99_ms)")" \
      "$(per_daemon "$k" leases_s %.0f)" "$(fmt %.0f "$(median_of "$k:leases_s_total")")" \
      "$(fmt %.4f "$(median_of "$k:script_calls_per_lease")")" "$(fmt %.2f "$(median_of "$k:redis_cpu_us_per_lease")")" \
      "$(forwarded_pct "$k:load")" "$(median_of "$k:admitted")/$EXHAUST_CAPACITY" "$(max_of "$k:over")" "$(max_of "$k:stranded")"
  done
done
echo
echo "columns: p50 .. max = reserve latency at a fixed $LATENCY_RATE/s per daemon (latency phase), timed from when each"
echo "request was due, the worst of the $DAEMONS daemons; wrk p50/p99 = the load phase's closed loop of $CONNECTIONS connections"
echo "(mostly queueing), the worst daemon; leases/s each and in total, load phase (every answer an admission);"
echo "calls/l = script calls (EVALSHA) per admitted lease and cpu us/l = redis-server CPU (INFO cpu, user+sys) per"
echo "admitted lease, load phase; fwd % = leases the daemons forwarded to Redis in the load phase, from their exit lines:"
echo "their whole life, so the warm-up's too (- : allotments off, every lease goes to Redis); admitted = leases answered"
echo "\"allowed\":true while the fleet exhausted a limit of the capacity shown (wrk's count); over = admitted beyond"
echo "capacity (must be 0); stranded = capacity not admitted once every daemon denies."

# ---- the targets: allotments on against off -----------------------------------
ratio() { # A B: A / B, or "-"
  if [ "$1" = - ] || [ "$2" = - ]; then echo -; else awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.3f", a / b; else print "-"}'; fi
}
verdict() { # VALUE LIMIT: "met" if VALUE <= LIMIT
  if [ "$1" = - ]; then echo "not measured"; else awk -v v="$1" -v l="$2" 'BEGIN {print ((v <= l) ? "met" : "MISSED")}'; fi
}
echo
echo "targets (allotments):"
for rtt in $RTTS; do
  p99=""
  for mode in $MODES; do p99="$p99${p99:+, }$mode $(fmt %.2f "$(median_of "$rtt:$mode:lat_worst_p99_ms")") ms"; done
  line="  RTT $rtt ms: reserve p99 at $LATENCY_RATE/s a daemon (the worst daemon): $p99"
  if [ "$ALLOTMENTS" != off ]; then
    target=""
    [ "$rtt" != 50 ] || target=" (the target at 50 ms RTT)"
    line="$line; on <= 2 ms$target: $(verdict "$(median_of "$rtt:on:lat_worst_p99_ms")" 2)"
  fi
  echo "$line"
  if [ "$ALLOTMENTS" = both ]; then
    r=$(ratio "$(median_of "$rtt:on:redis_cpu_us_per_lease")" "$(median_of "$rtt:off:redis_cpu_us_per_lease")")
    rl=$(ratio "$(median_of "$rtt:on:lat_redis_cpu_us_per_lease")" "$(median_of "$rtt:off:lat_redis_cpu_us_per_lease")")
    echo "    Redis CPU µs per admitted lease, on / off (target <= 1/20 = 0.05):" \
      "load phase $(median_of "$rtt:on:redis_cpu_us_per_lease") / $(median_of "$rtt:off:redis_cpu_us_per_lease") = $r: $(verdict "$r" 0.05);" \
      "at $LATENCY_RATE/s a daemon $(median_of "$rtt:on:lat_redis_cpu_us_per_lease") / $(median_of "$rtt:off:lat_redis_cpu_us_per_lease") = $rl: $(verdict "$rl" 0.05)"
  fi
done
echo "  one daemon with allotments >= 80 % of the memory backend's /v1/reserve req/s: bench/fleet/single.sh"

# ---- per daemon -----------------------------------------------------------------
echo
for rtt in $RTTS; do
  for mode in $MODES; do
    k="$rtt:$mode"
    echo "RTT $rtt ms, allotments $mode:"
    if [ "$LATENCY_S" != 0 ]; then
      slow=""
      [ "$rtt" -eq 0 ] || slow=" slower than the RTT (a round trip to Redis) $(per_daemon "$k" lat_slow %.0f);"
      echo "  latency at $LATENCY_RATE/s (each daemon): p50 $(per_daemon "$k" lat_p50_ms %.2f) ms, p99 $(per_daemon "$k" lat_p99_ms %.2f) ms," \
        "p99.9 $(per_daemon "$k" lat_p999_ms %.2f) ms, max $(per_daemon "$k" lat_max_ms %.2f) ms;" \
        "sent $(per_daemon "$k" lat_sent %.0f), failed $(per_daemon "$k" lat_failed %.0f), denied $(per_daemon "$k" lat_denied %.0f);$slow" \
        "Redis CPU $(median_of "$k:lat_redis_cpu_us_per_lease") µs and $(median_of "$k:lat_script_calls_per_lease") script calls a lease"
    fi
    echo "  load (wrk, each daemon): p50 $(per_daemon "$k" p50_ms %.2f) ms, p99 $(per_daemon "$k" p99_ms %.2f) ms;" \
      "redis-server $(median_of "$k:redis_cpu_pct") % of a core, the daemons $(median_of "$k:daemons_cpu_pct") %," \
      "the proxies $(median_of "$k:proxies_cpu_pct") %; Redis commands (the scripts' own included) $(median_of "$k:redis_calls_per_lease") a lease," \
      "the script's time $(median_of "$k:script_us_per_lease") µs a lease"
    echo "  exhaustion: admitted $(per_daemon "$k" admitted %.0f) = $(median_of "$k:admitted"), denied $(median_of "$k:denied")," \
      "the limit's used (Redis) $(median_of "$k:used")"
    if [ "$mode" = on ]; then
      echo "  leases each daemon forwarded to Redis, of all it answered (its exit line: its whole life, warm-up included):"
      for phase in load latency exhaust; do
        [ "$(median_of "$k:$phase:local:1")" != - ] || continue
        echo "    $phase: $(per_daemon "$k:$phase" forwarded %.0f) of $(per_daemon "$k:$phase" leases %.0f) ($(forwarded_pct "$k:$phase") % in all)"
      done
    fi
  done
done

over=0
for rtt in $RTTS; do
  for mode in $MODES; do [ "$(max_of "$rtt:$mode:over")" -eq 0 ] || over=1; done
done
[ "$over" -eq 0 ] || { echo "run.sh: OVER-ADMISSION: the fleet admitted more than the capacity" >&2; exit 1; }
