#!/usr/bin/env bash
# bench/fleet/single.sh — one daemon deciding from allotments against the
# memory backend: POST /v1/reserve req/s side by side (the
# target: one daemon with allotments on >= 80 % of the memory backend).
#
#   bench/fleet/single.sh     (DURATION=10s WARMUP=2s ROUNDS=3 CONNECTIONS=64 RTT=50 by default)
#   DURATION=3s WARMUP=1s ROUNDS=1 bench/fleet/single.sh   (a quick look)
#
# Three daemons, each measured alone, in turn, ROUNDS times (a noisy
# neighbour on the VM hits all alike); the median of each:
#   memory   --backend memory, bench/http's config and limits, no journal or
#            audit log (as bench/http/run.sh runs it);
#   direct   --backend redis --allotments, straight to a private redis-server;
#   rtt      --backend redis --allotments through bench/fleet/delay_proxy
#            delaying every byte RTT/2 each way.
# Each measurement has a fresh daemon (the redis ones on a FLUSHALLed Redis),
# `--threads 1` on core 0, bench/http/reserve.lua's load from
#   wrk -t1 -c$CONNECTIONS --latency -s bench/http/reserve.lua
# on core 1 (bench/http/run.sh's layout), WARMUP unmeasured (allotments
# carved and sized to the demand; the first leases of a key go to Redis),
# then DURATION measured. redis-server and the proxy are on core 1 too: with
# 2 cores, Redis shares wrk's core (the daemon's core is its own, as the
# memory backend's is). With allotments each daemon prints at exit how many
# leases it forwarded to Redis (its whole life, warm-up included): shown
# beside its figures.
# Needs: wrk, redis-server, redis-cli, taskset, curl, cmake (it builds
# ratelimiterd and delay_proxy into BUILD, default build).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${BUILD:-build}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-64}
RTT=${RTT:-50}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
REDIS_CORE=${REDIS_CORE:-1}
PROXY_CORE=${PROXY_CORE:-1}
VARIANTS="memory direct rtt"

for tool in wrk redis-server redis-cli taskset curl cmake; do
  command -v "$tool" >/dev/null || { echo "single.sh: $tool is missing (apt-get install wrk redis-server util-linux curl cmake)" >&2; exit 1; }
done

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target ratelimiterd delay_proxy >/dev/null

TMP=$(mktemp -d "${TMPDIR:-/tmp}/rl_bench_single.XXXXXX")
REDIS_PID=""
PROXY_PID=""
DAEMON_PID=""
WRK_PID=""
# alive PID: running (a child that exited stays a zombie until reaped).
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ -n "$state" ] && [ "$state" != Z ]
}
stop_pid() { # PID: TERM, 10 s, then KILL; reaped, quietly
  [ -n "$1" ] || return 0
  kill -TERM "$1" 2>/dev/null || true
  for _ in $(seq 1 100); do alive "$1" || break; sleep 0.1; done
  if alive "$1"; then kill -KILL "$1" 2>/dev/null || true; fi
  wait "$1" 2>/dev/null || true
}
cleanup() {
  trap '' INT TERM HUP PIPE
  stop_pid "$WRK_PID"
  stop_pid "$DAEMON_PID"
  stop_pid "$PROXY_PID"
  stop_pid "$REDIS_PID"
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
  [ -n "$REDIS_PORT" ] || { echo "single.sh: no free port for redis-server" >&2; exit 1; }
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
  echo "single.sh: redis-server did not start on 127.0.0.1:$REDIS_PORT:" >&2
  cat "$TMP/redis.log" >&2 || true
  exit 1
fi

# ---- the proxy of the rtt variant, for the whole run ----------------------------
taskset -c "$PROXY_CORE" "$BUILD/delay_proxy" --listen 127.0.0.1:0 --upstream "127.0.0.1:$REDIS_PORT" \
  --delay-ms $((RTT / 2)) 2>"$TMP/proxy.log" &
PROXY_PID=$!
PROXY_PORT=""
for _ in $(seq 1 100); do
  PROXY_PORT=$(sed -n 's/^delay_proxy listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$TMP/proxy.log")
  [ -n "$PROXY_PORT" ] && break
  sleep 0.02
done
[ -n "$PROXY_PORT" ] || { echo "single.sh: delay_proxy did not start:" >&2; cat "$TMP/proxy.log" >&2; exit 1; }

# The same limits for all: bench/http's (capacities nothing reaches, 1-second
# windows and hold timeouts).
cp "$ROOT/bench/http/config.yaml" "$TMP/config-memory.yaml"
redis_config() { # FILE PORT
  cat >"$1" <<YAML
server:
  backend: "redis"
redis:
  address: "127.0.0.1:$2"
  connections: 4
  key_prefix: "rlsingle:"
  lease_memory_ms: 2000
  max_leases_per_batch: 1024
  flush_interval_us: 200
  flushes_in_flight: 2
YAML
}
redis_config "$TMP/config-direct.yaml" "$REDIS_PORT"
redis_config "$TMP/config-rtt.yaml" "$PROXY_PORT"

# start_daemon VARIANT: DAEMON_PID and PORT of a fresh daemon, its registry a
# copy of bench/http/limits.json in a directory of its own.
start_daemon() {
  local variant=$1 flags=()
  rm -rf "$TMP/d-$variant"
  mkdir -p "$TMP/d-$variant"
  cp "$ROOT/bench/http/limits.json" "$TMP/d-$variant/limits.json"
  if [ "$variant" = memory ]; then
    flags=(--no-journal --no-audit)
  else
    flags=(--allotments)
    redis flushall >/dev/null
  fi
  taskset -c "$SERVER_CORE" "$BUILD/ratelimiterd" -c "$TMP/config-$variant.yaml" --listen 127.0.0.1:0 \
    --registry "$TMP/d-$variant/limits.json" --threads 1 "${flags[@]}" 2>"$TMP/d-$variant/daemon.log" &
  DAEMON_PID=$!
  PORT=""
  for _ in $(seq 1 200); do
    PORT=$(sed -n 's/^ratelimiterd listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$TMP/d-$variant/daemon.log")
    [ -n "$PORT" ] && break
    kill -0 "$DAEMON_PID" 2>/dev/null || break
    sleep 0.05
  done
  [ -n "$PORT" ] || { echo "single.sh: ratelimiterd ($variant) did not start:" >&2; cat "$TMP/d-$variant/daemon.log" >&2; exit 1; }
}

# stop_daemon VARIANT: its exit line's forwarded share, into FORWARDED ("" without allotments).
stop_daemon() {
  local variant=$1
  kill -TERM "$DAEMON_PID" 2>/dev/null || true
  wait "$DAEMON_PID" || { echo "single.sh: ratelimiterd ($variant) did not stop cleanly:" >&2; cat "$TMP/d-$variant/daemon.log" >&2; DAEMON_PID=""; exit 1; }
  DAEMON_PID=""
  FORWARDED=$(sed -n 's/^ratelimiterd: allotments: .* by Redis (\([0-9.]*\) %).*/\1/p' "$TMP/d-$variant/daemon.log")
}

# run_wrk DURATION OUT: wrk on CLIENT_CORE against the daemon; warns if any answer was not 2xx.
run_wrk() {
  taskset -c "$CLIENT_CORE" wrk -t1 -c"$CONNECTIONS" -d"$1" --latency -s "$ROOT/bench/http/reserve.lua" \
    "http://127.0.0.1:$PORT" >"$2" 2>&1 &
  WRK_PID=$!
  wait "$WRK_PID" || { WRK_PID=""; echo "single.sh: wrk failed:" >&2; cat "$2" >&2; exit 1; }
  WRK_PID=""
  if grep -qE "Non-2xx|Socket errors" "$2"; then echo "single.sh: errors from $variant:" >&2; cat "$2" >&2; fi
}

# wrk latency figure ("512.00us", "1.20ms", "2.00s") in ms.
to_ms() {
  awk -v v="$1" 'BEGIN {
    n = v + 0
    if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n *= 1; else if (v ~ /m$/) n *= 60000; else if (v ~ /s$/) n *= 1000
    printf "%.3f", n }'
}

: >"$TMP/results"
for round in $(seq 1 "$ROUNDS"); do
  line="round $round:"
  for variant in $VARIANTS; do
    start_daemon "$variant"
    [ "$WARMUP" = 0 ] || run_wrk "$WARMUP" "$TMP/warmup.out"
    run_wrk "$DURATION" "$TMP/wrk.out"
    stop_daemon "$variant"
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$TMP/wrk.out")
    {
      echo "$variant:rps $rps"
      echo "$variant:p50 $(to_ms "$(awk '$1 == "50%" {print $2}' "$TMP/wrk.out")")"
      echo "$variant:p99 $(to_ms "$(awk '$1 == "99%" {print $2}' "$TMP/wrk.out")")"
      echo "$variant:avg $(to_ms "$(awk '$1 == "Latency" && NF >= 4 {print $2; exit}' "$TMP/wrk.out")")"
      echo "$variant:max $(to_ms "$(awk '$1 == "Latency" && NF >= 4 {print $4; exit}' "$TMP/wrk.out")")"
      [ -z "$FORWARDED" ] || echo "$variant:forwarded $FORWARDED"
    } >>"$TMP/results"
    line="$line $variant $rps req/s${FORWARDED:+ ($FORWARDED % forwarded)},"
  done
  echo "${line%,}"
done

median_of() { # KEY
  awk -v k="$1" '$1 == k {print $2}' "$TMP/results" | sort -g |
    awk '{v[NR] = $1} END {if (NR == 0) print "-"; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
MEMORY=$(median_of memory:rps)
echo
echo "POST /v1/reserve (bench/http/reserve.lua), wrk -t1 -c$CONNECTIONS --latency, $WARMUP unmeasured then $DURATION;"
echo "one ratelimiterd --threads 1 on core $SERVER_CORE; wrk on core $CLIENT_CORE, redis-server on core $REDIS_CORE, the proxy on core $PROXY_CORE"
[ "$CLIENT_CORE" != "$REDIS_CORE" ] ||
  echo "(with 2 cores Redis shares wrk's core: the redis variants' Redis work competes with the load generator there);"
echo "median of $ROUNDS:"
printf "  %-32s %9s %9s %8s %8s %8s %8s %10s\n" "" "req/s" "/ memory" "p50 ms" "p99 ms" "avg ms" "max ms" "forwarded"
for variant in $VARIANTS; do
  case $variant in
    memory) name="memory backend" ;;
    direct) name="redis --allotments, direct" ;;
    rtt) name="redis --allotments, RTT $RTT ms" ;;
  esac
  rps=$(median_of "$variant:rps")
  fwd=$(median_of "$variant:forwarded")
  printf "  %-32s %9.0f %8.1f%% %8.2f %8.2f %8.2f %8.2f %10s\n" "$name" "$rps" "$(awk -v a="$rps" -v b="$MEMORY" 'BEGIN {print 100 * a / b}')" \
    "$(median_of "$variant:p50")" "$(median_of "$variant:p99")" "$(median_of "$variant:avg")" "$(median_of "$variant:max")" \
    "$([ "$fwd" = - ] && echo - || echo "$fwd %")"
done
echo "p50/p99/avg/max: wrk's, a closed loop of $CONNECTIONS connections (req/s = connections / avg latency: a few leases"
echo "forwarded to Redis through a long round trip weigh on the average); forwarded: leases the daemon sent to Redis"
echo "(the synchronous path), of all it answered, from its exit line (its whole life: the warm-up's first leases included)."
for variant in direct rtt; do
  name=direct
  [ "$variant" = direct ] || name="RTT $RTT ms"
  awk -v a="$(median_of "$variant:rps")" -v b="$MEMORY" -v name="$name" 'BEGIN {
    r = 100 * a / b
    printf "target (one daemon with allotments >= 80 %% of the memory backend), %s: %.1f %%: %s\n",
      name, r, (r >= 80 ? "met" : "MISSED") }'
done
