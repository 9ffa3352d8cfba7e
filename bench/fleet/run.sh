#!/usr/bin/env bash
# bench/fleet/run.sh — a fleet of ratelimiterd --backend redis daemons sharing
# one Redis, each in a simulated region: it reaches Redis through its own
# bench/fleet/delay_proxy, which delays every byte by RTT/2 each way.
#
#   bench/fleet/run.sh
#       DURATION=10s EXHAUST_DURATION=5s RTTS="0 10 50" DAEMONS=3 CONNECTIONS=64
#       EXHAUST_CAPACITY=5000 ROUNDS=1 ALLOTMENTS=off   by default
#   DURATION=3s EXHAUST_DURATION=3s RTTS=50 bench/fleet/run.sh   (a quick look)
#
# For every RTT (ms) in RTTS, two phases, each on a FLUSHALLed Redis with
# freshly started daemons (each --threads 1, its own registry copy):
#  1. load: the 4 limits of bench/http/reserve.lua's lease with capacities
#     nothing reaches; one wrk per daemon, all at once
#       wrk -t1 -c$CONNECTIONS -d$DURATION --latency -s bench/http/reserve.lua
#     (lease ids seeded from /dev/urandom: they differ between the wrks)
#     gives reserve p50/p99 and leases/s per daemon (every answer is an
#     admission: nothing is near its capacity), and Redis's INFO commandstats
#     and INFO cpu deltas give script calls (EVALSHA) and Redis CPU µs per
#     admitted lease (user+sys of redis-server, all its commands and its
#     networking), and the script's own µs per lease (commandstats).
#  2. exhaustion: the same lease, but its rpm limit is a rolling limit of
#     EXHAUST_CAPACITY requests over a 1-hour window, so the fleet exhausts it
#     and nothing comes back during the run; one wrk per daemon with
#     bench/fleet/reserve_count.lua (counts answers "allowed":true) for
#     EXHAUST_DURATION. over-admissions = admitted (summed over the wrks) -
#     capacity, if positive: must be 0. stranded = capacity - admitted once
#     every daemon denies (units the fleet holds back while it says no: held in
#     allotments); the synchronous path holds nothing outside Redis, so 0. The
#     limit's own "used" (from Redis, GET /v1/admin/limits/KEY) is printed beside.
# ROUNDS > 1 repeats everything and reports the median of each figure (the
# worst round for over-admissions and stranded capacity). Exits 1 if the fleet
# ever admitted more than the capacity.
#
# ALLOTMENTS=on passes --allotments to the daemons (issue 12; the flag does
# not exist yet: leave it off until it does).
#
# Layout on the 2-core VM: redis-server alone on core 1 (Redis runs scripts on
# one thread: one core is what "one Redis" has); the daemons, the wrks and the
# proxies on core 0 (REDIS_CORE, DAEMON_CORE, CLIENT_CORE, PROXY_CORE). The
# proxies cost little (~5 % of a core at RTT 0), and putting them or wrk on
# core 1 moved the RTT 0 figures less than run-to-run noise. From 10 ms on
# the round trip is what limits the synchronous path, not a core.
# Needs: wrk, redis-server, redis-cli, taskset, curl, cmake (it builds
# ratelimiterd and delay_proxy into BUILD, default build).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${BUILD:-build}
DURATION=${DURATION:-10s}
EXHAUST_DURATION=${EXHAUST_DURATION:-5s}
RTTS=${RTTS:-"0 10 50"}
DAEMONS=${DAEMONS:-3}
CONNECTIONS=${CONNECTIONS:-64}
EXHAUST_CAPACITY=${EXHAUST_CAPACITY:-5000}
ROUNDS=${ROUNDS:-1}
ALLOTMENTS=${ALLOTMENTS:-off}
REDIS_CORE=${REDIS_CORE:-1}
DAEMON_CORE=${DAEMON_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-0}
PROXY_CORE=${PROXY_CORE:-0}

for tool in wrk redis-server redis-cli taskset curl cmake; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing (apt-get install wrk redis-server util-linux curl cmake)" >&2; exit 1; }
done
case "$ALLOTMENTS" in on | off) ;; *) echo "run.sh: ALLOTMENTS is on or off, not $ALLOTMENTS" >&2; exit 2 ;; esac

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target ratelimiterd delay_proxy >/dev/null

TMP=$(mktemp -d /tmp/rl_bench_fleet.XXXXXX)
REDIS_PID=""
DAEMON_PIDS=()
DAEMON_PORTS=()
PROXY_PIDS=()
PROXY_PORTS=()
WRK_PIDS=()
stop_pids() { # SIGNAL PID...: each stopped and reaped, quietly
  local sig=$1 pid
  shift
  for pid in "$@"; do kill "-$sig" "$pid" 2>/dev/null || true; done
  for pid in "$@"; do wait "$pid" 2>/dev/null || true; done
}
cleanup() {
  stop_pids TERM "${WRK_PIDS[@]}" "${DAEMON_PIDS[@]}" "${PROXY_PIDS[@]}" $REDIS_PID
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- a private redis-server on a free loopback port, on REDIS_CORE ---------
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
REDIS_PORT=""
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
start_daemons() { # LIMITS_FILE
  local limits=$1 i port flags=()
  [ "$ALLOTMENTS" = on ] && flags=(--allotments)
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

stop_daemons() {
  local pid i=0
  for pid in "${DAEMON_PIDS[@]}"; do kill -TERM "$pid"; done
  for pid in "${DAEMON_PIDS[@]}"; do
    i=$((i + 1))
    wait "$pid" || { echo "run.sh: ratelimiterd $i did not stop cleanly:" >&2; cat "$TMP/d$i/daemon.log" >&2; exit 1; }
  done
  DAEMON_PIDS=()
}

# run_wrks SCRIPT DURATION: one wrk per daemon, all at once; output in $TMP/wrk$i.out.
run_wrks() {
  local script=$1 duration=$2 i pid failed=""
  WRK_PIDS=()
  for i in $(seq 1 "$DAEMONS"); do
    taskset -c "$CLIENT_CORE" wrk -t1 -c"$CONNECTIONS" -d"$duration" --latency -s "$script" \
      "http://127.0.0.1:${DAEMON_PORTS[$((i - 1))]}" >"$TMP/wrk$i.out" 2>&1 &
    WRK_PIDS+=($!)
  done
  i=0
  for pid in "${WRK_PIDS[@]}"; do
    i=$((i + 1))
    wait "$pid" || failed="$failed $i"
  done
  WRK_PIDS=()
  [ -z "$failed" ] || { echo "run.sh: wrk failed (daemons$failed):" >&2; cat "$TMP"/wrk*.out >&2; exit 1; }
}

# Results: "KEY VALUE" lines, KEY = rtt:metric[:daemon]; medians over rounds.
: >"$TMP/results"
result() { echo "$1 $2" >>"$TMP/results"; }

# phase_load RTT: reserve latency, leases/s, Redis calls and CPU per lease.
phase_load() {
  local rtt=$1 i out rps p50 p99 requests total=0 r0 r1 c0 c1 d0 d1 p0 p1 t0 t1 stats calls script_us all_calls
  start_daemons "$TMP/limits-load.json"
  redis config resetstat >/dev/null
  r0=$(redis_cpu_s); d0=$(sum_ticks "${DAEMON_PIDS[@]}"); p0=$(sum_ticks "${PROXY_PIDS[@]}"); t0=$(date +%s.%N)
  run_wrks "$ROOT/bench/http/reserve.lua" "$DURATION"
  r1=$(redis_cpu_s); d1=$(sum_ticks "${DAEMON_PIDS[@]}"); p1=$(sum_ticks "${PROXY_PIDS[@]}"); t1=$(date +%s.%N)
  redis info commandstats | tr -d '\r' >"$TMP/commandstats"
  for i in $(seq 1 "$DAEMONS"); do
    out=$(cat "$TMP/wrk$i.out")
    if grep -qE "Non-2xx|Socket errors" <<<"$out"; then echo "run.sh: errors at RTT $rtt ms, daemon $i:" >&2; echo "$out" >&2; fi
    rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
    p50=$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")
    p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
    requests=$(awk '/requests in/ {print $1}' <<<"$out")
    result "$rtt:leases_s:$i" "$rps"
    result "$rtt:p50_ms:$i" "$p50"
    result "$rtt:p99_ms:$i" "$p99"
    total=$((total + requests))
  done
  stats=$(sed -n 's/^cmdstat_evalsha://p' "$TMP/commandstats")
  calls=$(sed -n 's/^calls=\([0-9]*\),.*/\1/p' <<<"$stats")
  script_us=$(sed -n 's/.*,usec=\([0-9]*\),.*/\1/p' <<<"$stats")
  # Every command the fleet sent (the script's own INFO and CONFIG aside).
  all_calls=$(awk -F'[:=,]' '/^cmdstat_/ && $1 !~ /cmdstat_(info|config)/ {s += $3} END {print s + 0}' "$TMP/commandstats")
  awk -v n="$total" -v calls="${calls:-0}" -v all="$all_calls" -v sus="${script_us:-0}" -v r0="$r0" -v r1="$r1" \
      -v d="$((d1 - d0))" -v p="$((p1 - p0))" -v hz="$HZ" -v t0="$t0" -v t1="$t1" -v rtt="$rtt" 'BEGIN {
    secs = t1 - t0
    printf "%s:leases_s_total %.0f\n", rtt, n / secs
    printf "%s:script_calls_per_lease %.4f\n", rtt, n ? calls / n : 0
    printf "%s:redis_calls_per_lease %.4f\n", rtt, n ? all / n : 0
    printf "%s:redis_cpu_us_per_lease %.2f\n", rtt, n ? (r1 - r0) * 1e6 / n : 0
    printf "%s:script_us_per_lease %.2f\n", rtt, n ? sus / n : 0
    printf "%s:redis_cpu_pct %.0f\n", rtt, 100 * (r1 - r0) / secs
    printf "%s:daemons_cpu_pct %.0f\n", rtt, 100 * d / hz / secs
    printf "%s:proxies_cpu_pct %.0f\n", rtt, 100 * p / hz / secs
  }' >>"$TMP/results"
  stop_daemons
}

# phase_exhaust RTT: the fleet against a limit it exhausts; admitted vs capacity.
phase_exhaust() {
  local rtt=$1 i out line admitted=0 denied=0 other=0 a d used
  start_daemons "$TMP/limits-exhaust.json"
  run_wrks "$ROOT/bench/fleet/reserve_count.lua" "$EXHAUST_DURATION"
  for i in $(seq 1 "$DAEMONS"); do
    out=$(cat "$TMP/wrk$i.out")
    # A request wrk gave up on (timeout) may have been admitted all the same:
    # the count would then be short.
    if grep -q "Socket errors" <<<"$out"; then echo "run.sh: socket errors at RTT $rtt ms, daemon $i (exhaustion):" >&2; echo "$out" >&2; fi
    line=$(grep '^fleet_count ' <<<"$out") || { echo "run.sh: no count from wrk $i:" >&2; echo "$out" >&2; exit 1; }
    a=$(sed -n 's/.*admitted=\([0-9]*\).*/\1/p' <<<"$line")
    d=$(sed -n 's/.*denied=\([0-9]*\).*/\1/p' <<<"$line")
    admitted=$((admitted + a))
    denied=$((denied + d))
    other=$((other + $(sed -n 's/.*other=\([0-9]*\).*/\1/p' <<<"$line")))
    result "$rtt:admitted:$i" "$a"
    # Stranded capacity is measured once every daemon says no.
    [ "$d" -gt 0 ] || echo "run.sh: RTT $rtt ms: daemon $i denied nothing (the limit not exhausted there): raise EXHAUST_DURATION or lower EXHAUST_CAPACITY" >&2
  done
  used=$(curl -sf "http://127.0.0.1:${DAEMON_PORTS[0]}/v1/admin/limits/$RPM_KEY" |
    sed -n 's/.*"usage":{[^}]*"used":\([0-9]*\).*/\1/p')
  [ "$other" -eq 0 ] || echo "run.sh: RTT $rtt ms: $other answers neither admitted nor denied (errors)" >&2
  # Synchronously, Redis counts exactly what was admitted (with allotments it
  # also counts what the daemons hold).
  [ "$ALLOTMENTS" = on ] || [ "${used:-0}" -eq "$admitted" ] ||
    echo "run.sh: RTT $rtt ms: Redis counts $used used, the wrks $admitted admitted" >&2
  result "$rtt:admitted" "$admitted"
  result "$rtt:denied" "$denied"
  result "$rtt:used" "${used:-0}"
  result "$rtt:over" $((admitted > EXHAUST_CAPACITY ? admitted - EXHAUST_CAPACITY : 0))
  # Meaningful once every daemon denies (denied > 0 above, and the run lasts
  # well past exhaustion): what the fleet still holds back.
  result "$rtt:stranded" $((admitted < EXHAUST_CAPACITY ? EXHAUST_CAPACITY - admitted : 0))
  stop_daemons
}

echo "machine: $(nproc) cores; redis-server on core $REDIS_CORE; $DAEMONS ratelimiterd (--threads 1) on core $DAEMON_CORE, their delay_proxies on core $PROXY_CORE, wrk on core $CLIENT_CORE"
echo "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') (no persistence); allotments $ALLOTMENTS; submitter: 4 Redis connections, max_leases_per_batch 1024, flush_interval_us 200, flushes_in_flight 2"
echo "load: wrk -t1 -c$CONNECTIONS -d$DURATION --latency -s bench/http/reserve.lua against each daemon at once"
echo "exhaustion: rpm = $EXHAUST_CAPACITY requests / 1 h; wrk -t1 -c$CONNECTIONS -d$EXHAUST_DURATION -s bench/fleet/reserve_count.lua against each daemon at once"
echo

for round in $(seq 1 "$ROUNDS"); do
  for rtt in $RTTS; do
    start_proxies "$rtt"
    phase_load "$rtt"
    phase_exhaust "$rtt"
    stop_proxies
    [ "$ROUNDS" -eq 1 ] || echo "round $round, RTT $rtt ms done" >&2
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
per_daemon() { # RTT METRIC FORMAT: "a / b / c"
  local rtt=$1 metric=$2 fmt=$3 i s=""
  for i in $(seq 1 "$DAEMONS"); do
    s="$s${s:+ / }$(printf "$fmt" "$(median_of "$rtt:$metric:$i")")"
  done
  echo "$s"
}
[ "$ROUNDS" -eq 1 ] || echo "medians of $ROUNDS rounds (over and stranded: the worst round)"
printf "%-6s | %-22s | %-26s | %-24s | %9s | %8s | %8s | %8s | %8s | %6s | %8s\n" "RTT ms" "reserve p50 ms (each)" \
  "reserve p99 ms (each)" "leases/s (each)" "leases/s" "calls/ls" "cpu us/l" "scr us/l" "admitted" "over" "stranded"
for rtt in $RTTS; do
  printf "%-6s | %-22s | %-26s | %-24s | %9.0f | %8.4f | %8.2f | %8.2f | %8s | %6s | %8s\n" "$rtt" \
    "$(per_daemon "$rtt" p50_ms %.2f)" "$(per_daemon "$rtt" p99_ms %.2f)" "$(per_daemon "$rtt" leases_s %.0f)" \
    "$(median_of "$rtt:leases_s_total")" "$(median_of "$rtt:script_calls_per_lease")" \
    "$(median_of "$rtt:redis_cpu_us_per_lease")" "$(median_of "$rtt:script_us_per_lease")" \
    "$(median_of "$rtt:admitted")/$EXHAUST_CAPACITY" "$(max_of "$rtt:over")" "$(max_of "$rtt:stranded")"
done
echo
for rtt in $RTTS; do
  echo "RTT $rtt ms: redis-server $(median_of "$rtt:redis_cpu_pct") % of a core, the daemons $(median_of "$rtt:daemons_cpu_pct") %," \
    "the proxies $(median_of "$rtt:proxies_cpu_pct") % (load phase); Redis commands (the scripts' own included) $(median_of "$rtt:redis_calls_per_lease") a lease;" \
    "exhaustion: admitted $(per_daemon "$rtt" admitted %.0f) = $(median_of "$rtt:admitted"), denied $(median_of "$rtt:denied")," \
    "the limit's used (Redis) $(median_of "$rtt:used")"
done
echo
echo "columns: p50/p99 from each daemon's wrk; leases/s each and in total (every answer of the load phase is an"
echo "admission); calls/ls = script calls (EVALSHA) per admitted lease; cpu us/l = redis-server CPU (INFO cpu, user+sys)"
echo "per admitted lease; scr us/l = Redis time in the script per lease (INFO commandstats); admitted = leases"
echo "answered \"allowed\":true while the fleet exhausted a limit of the capacity shown (wrk's count); over ="
echo "admitted beyond capacity (must be 0); stranded = capacity not admitted once every daemon denies."
over=0
for rtt in $RTTS; do [ "$(max_of "$rtt:over")" -eq 0 ] || over=1; done
[ "$over" -eq 0 ] || { echo "run.sh: OVER-ADMISSION: the fleet admitted more than the capacity" >&2; exit 1; }
