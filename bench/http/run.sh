#!/usr/bin/env bash
# bench/http/run.sh — POST /v1/reserve over keep-alive HTTP/1.1, side by side
# with nginx answering a constant JSON body, under the same wrk load.
#
#   bench/http/run.sh     (DURATION=10s CONNECTIONS=64 ROUNDS=5 by default)
#
# Both servers run on core 0 (ratelimiterd --threads 1, one nginx worker),
# wrk on core 1; wrk drives them in turn, ROUNDS times. Prints the median
# requests/s of each and the ratio, then the batch endpoint in leases/s.
# The daemon runs as users run it: its journal and audit log on, with the
# default fsync (everysec). Every round also drives, side by side, the same
# daemon without journal and audit log (--no-journal --no-audit) and with
# journal_fsync always, and prints each one's requests/s and p99 latency
# (JOURNAL=0 runs the main daemon without them, as older runs did).
# ACCESS_LOG=1 (the default; 0: without) runs two more daemons in every
# round, with log.access json and text written to a file on disk, and
# prints their requests/s as a share of the daemon without it, and the
# lines each wrote and dropped (a dropped line is a line not paid for).
# Each round also drives /v1/reserve on the daemon while GET /metrics is
# scraped every second (as Prometheus would, from the client core), and on a
# second daemon with metrics off (metrics.enabled: false): the cost of
# metrics, side by side (METRICS=0 leaves both out).
# BASE=<git revision> adds that revision's ratelimiterd (built in a
# worktree) to every round, the batch endpoint too, and prints this build's
# figures as a share of BASE's: a change measured side by side with before.
# Needs: wrk, nginx (nginx-light), taskset, curl (and git for BASE).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
. bench/base_build.sh
BUILD=${BUILD:-build}
BASE=${BASE:-}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
BATCH_CONNECTIONS=${BATCH_CONNECTIONS:-16}
ROUNDS=${ROUNDS:-5}
JOURNAL=${JOURNAL:-1}
ACCESS_LOG=${ACCESS_LOG:-1}
METRICS=${METRICS:-1}
NGINX_PORT=${NGINX_PORT:-18089}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}

for tool in wrk nginx taskset curl; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing (apt-get install wrk nginx-light util-linux curl)" >&2; exit 1; }
done

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target ratelimiterd >/dev/null

TMP=$(mktemp -d /tmp/rl_bench_http.XXXXXX)
DAEMON_PID=""
NOJOURNAL_PID=""
ALWAYS_PID=""
DATA=""
BASE_PID=""
NGINX_PID=""
ACCESS_PIDS=()
ACCESS_DIR=""
OFF_PID=""
SCRAPER_PID=""
cleanup() {
  [ -n "$SCRAPER_PID" ] && kill -TERM "$SCRAPER_PID" 2>/dev/null && wait "$SCRAPER_PID" 2>/dev/null || true
  [ -n "$DAEMON_PID" ] && kill -TERM "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null || true
  [ -n "$NOJOURNAL_PID" ] && kill -TERM "$NOJOURNAL_PID" 2>/dev/null && wait "$NOJOURNAL_PID" 2>/dev/null || true
  [ -n "$ALWAYS_PID" ] && kill -TERM "$ALWAYS_PID" 2>/dev/null && wait "$ALWAYS_PID" 2>/dev/null || true
  [ -z "$DATA" ] || rm -rf "$DATA"
  for pid in "${ACCESS_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  [ -z "$ACCESS_DIR" ] || rm -rf "$ACCESS_DIR"
  [ -n "$OFF_PID" ] && kill -TERM "$OFF_PID" 2>/dev/null && wait "$OFF_PID" 2>/dev/null || true
  [ -n "$BASE_PID" ] && kill -TERM "$BASE_PID" 2>/dev/null && wait "$BASE_PID" 2>/dev/null || true
  [ -z "$BASE" ] || base_remove "$TMP/base"
  [ -n "$NGINX_PID" ] && kill -QUIT "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
[ -z "$BASE" ] || base_build "$BASE" "$TMP/base"

# bench/http/limits.json: capacities nothing reaches; 1-second windows and
# hold timeouts keep the live state at about one second of traffic, as a
# busy limiter sees it (config.yaml: 2 s of lease memory).
cp "$ROOT/bench/http/limits.json" "$TMP/limits.json"
cp "$ROOT/bench/http/config.yaml" "$TMP/config.yaml"
# The same with metrics off, for the side-by-side rows.
{ cat "$ROOT/bench/http/config.yaml"; printf 'metrics:\n  enabled: false\n'; } >"$TMP/config-metrics-off.yaml"

# Requests/sec from wrk's summary; warns if any answer was not 2xx.
run_wrk() {
  local script=$1 url=$2 connections=$3 out
  out=$(taskset -c "$CLIENT_CORE" wrk -t1 -c"$connections" -d"$DURATION" -s "$script" "$url")
  if grep -q "Non-2xx" <<<"$out"; then echo "run.sh: non-2xx answers from $url:" >&2; echo "$out" >&2; fi
  awk '/^Requests\/sec:/ {print $2}' <<<"$out"
}

# "requests/s p99-ms" from wrk --latency.
run_wrk_p99() {
  local script=$1 url=$2 connections=$3 out
  out=$(taskset -c "$CLIENT_CORE" wrk -t1 -c"$connections" -d"$DURATION" --latency -s "$script" "$url")
  if grep -q "Non-2xx" <<<"$out"; then echo "run.sh: non-2xx answers from $url:" >&2; echo "$out" >&2; fi
  awk '/^Requests\/sec:/ {rps = $2}
       /^ +99%/ {v = $2; ms = v + 0; if (v ~ /us$/) ms /= 1000; else if (v ~ /ms$/) ms += 0; else if (v ~ /s$/) ms *= 1000; p99 = ms}
       END {print rps, p99}' <<<"$out"
}

# ---- ratelimiterd (and BASE's) and nginx, all on the server core --------------
# start_daemon BINARY NAME [CONFIG [FLAG...]]: STARTED_PID and STARTED_PORT of
# a new daemon (its registry a copy of limits.json, in a directory of its
# own: its journal and audit log default to beside it, never shared with
# another's; a data directory on disk, not /tmp, which may be memory).
start_daemon() {
  local binary=$1 name=$2 config=${3:-$TMP/config.yaml} flags=("${@:4}")
  mkdir -p "$DATA/data-$name"
  cp "$TMP/limits.json" "$DATA/data-$name/limits.json"
  if [ "$JOURNAL" = 0 ] && [ ${#flags[@]} -eq 0 ] && "$binary" --help 2>&1 | grep -q -- --no-journal; then
    flags=(--no-journal --no-audit)
  fi
  taskset -c "$SERVER_CORE" "$binary" -c "$config" --listen 127.0.0.1:0 \
    --registry "$DATA/data-$name/limits.json" --threads 1 "${flags[@]}" 2>"$TMP/$name.log" &
  STARTED_PID=$!
  STARTED_PORT=""
  for _ in $(seq 1 200); do
    STARTED_PORT=$(sed -n 's/^ratelimiterd listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$TMP/$name.log")
    [ -n "$STARTED_PORT" ] && break
    sleep 0.05
  done
  [ -n "$STARTED_PORT" ] || { echo "run.sh: ratelimiterd ($name) did not start:" >&2; cat "$TMP/$name.log" >&2; exit 1; }
}
DATA=$(mktemp -d "$(cd "$BUILD" && pwd)/rl_bench_data.XXXXXX")
start_daemon "$BUILD/ratelimiterd" daemon
DAEMON_PID=$STARTED_PID
PORT=$STARTED_PORT
# The same daemon without journal and audit log, and with fsync always.
start_daemon "$BUILD/ratelimiterd" nojournal "$TMP/config.yaml" --no-journal --no-audit
NOJOURNAL_PID=$STARTED_PID
NOJOURNAL_PORT=$STARTED_PORT
start_daemon "$BUILD/ratelimiterd" always "$TMP/config.yaml" --journal-fsync always
ALWAYS_PID=$STARTED_PID
ALWAYS_PORT=$STARTED_PORT
OFF_PORT=""
if [ "$METRICS" = 1 ]; then
  start_daemon "$BUILD/ratelimiterd" metrics-off "$TMP/config-metrics-off.yaml"
  OFF_PID=$STARTED_PID
  OFF_PORT=$STARTED_PORT
fi
BASE_PORT=""
if [ -n "$BASE" ]; then
  start_daemon "$TMP/base/build/ratelimiterd" base
  BASE_PID=$STARTED_PID
  BASE_PORT=$STARTED_PORT
fi

# The access log on, as JSON and as text: the same daemon and config, plus
# log.access, writing to a file on disk (not /tmp, which may be memory),
# emptied after each run so that a long run does not fill the disk.
ACCESS_FORMATS=()
ACCESS_PORTS=()
if [ "$ACCESS_LOG" = 1 ]; then
  ACCESS_DIR=$(mktemp -d "$(cd "$BUILD" && pwd)/rl_bench_access.XXXXXX")
  for format in json text; do
    { cat "$TMP/config.yaml"; printf 'log:\n  access: %s\n  access_path: "%s/%s.log"\n' "$format" "$ACCESS_DIR" "$format"; } \
      >"$TMP/config-access-$format.yaml"
    start_daemon "$BUILD/ratelimiterd" "access-$format" "$TMP/config-access-$format.yaml"
    ACCESS_FORMATS+=("$format")
    ACCESS_PIDS+=("$STARTED_PID")
    ACCESS_PORTS+=("$STARTED_PORT")
  done
fi
declare -A ACCESS_ALL=()

# nginx is the ceiling: a constant body of similar size, no work at all.
mkdir -p "$TMP/nginx/logs"
cat >"$TMP/nginx/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $TMP/nginx/body;
  proxy_temp_path $TMP/nginx/proxy;
  fastcgi_temp_path $TMP/nginx/fastcgi;
  uwsgi_temp_path $TMP/nginx/uwsgi;
  scgi_temp_path $TMP/nginx/scgi;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location / {
      default_type application/json;
      return 200 '{"allowed":true,"retry_after_ms":0,"reserved_at_unix_ms":1736660000000,"error":""}';
    }
  }
}
NGINX
taskset -c "$SERVER_CORE" nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" -e "$TMP/nginx/logs/error.log" &
NGINX_PID=$!
for _ in $(seq 1 100); do
  curl -s -o /dev/null "http://127.0.0.1:$NGINX_PORT/" && break
  sleep 0.05
done

# GET /metrics every second on the client core, as a Prometheus would,
# for as long as it runs; each scrape's time (ms) and size go to $TMP/scrapes.
start_scraper() {
  (
    while :; do
      taskset -c "$CLIENT_CORE" curl -s -o /dev/null -w '%{time_total} %{size_download} %{http_code}\n' \
        "http://127.0.0.1:$PORT/metrics" >>"$TMP/scrapes" || true
      sleep 1
    done
  ) &
  SCRAPER_PID=$!
}
stop_scraper() {
  kill -TERM "$SCRAPER_PID" 2>/dev/null || true
  wait "$SCRAPER_PID" 2>/dev/null || true
  SCRAPER_PID=""
}

# Alternate the two so that a noisy neighbour on the VM hits both alike;
# report the median of each.
RL_ALL=""
NGINX_ALL=""
BASE_ALL=""
BATCH_ALL=""
BASE_BATCH_ALL=""
SCRAPED_ALL=""
OFF_ALL=""
SHARE_ALL=""
RL_P99_ALL=""
NOJOURNAL_ALL=""
NOJOURNAL_P99_ALL=""
ALWAYS_ALL=""
ALWAYS_P99_ALL=""
for round in $(seq 1 "$ROUNDS"); do
  read -r rl rl_p99 <<<"$(run_wrk_p99 "$ROOT/bench/http/reserve.lua" "http://127.0.0.1:$PORT" "$CONNECTIONS")"
  ng=$(run_wrk "$ROOT/bench/http/reserve.lua" "http://127.0.0.1:$NGINX_PORT" "$CONNECTIONS")
  read -r nj nj_p99 <<<"$(run_wrk_p99 "$ROOT/bench/http/reserve.lua" "http://127.0.0.1:$NOJOURNAL_PORT" "$CONNECTIONS")"
  read -r al al_p99 <<<"$(run_wrk_p99 "$ROOT/bench/http/reserve.lua" "http://127.0.0.1:$ALWAYS_PORT" "$CONNECTIONS")"
  RL_P99_ALL="$RL_P99_ALL $rl_p99"
  NOJOURNAL_ALL="$NOJOURNAL_ALL $nj"
  NOJOURNAL_P99_ALL="$NOJOURNAL_P99_ALL $nj_p99"
  ALWAYS_ALL="$ALWAYS_ALL $al"
  ALWAYS_P99_ALL="$ALWAYS_P99_ALL $al_p99"
  line="round $round: ratelimiterd $rl req/s (p99 $rl_p99 ms), nginx $ng req/s, no journal $nj req/s (p99 $nj_p99 ms), fsync always $al req/s (p99 $al_p99 ms)"
  if [ "$METRICS" = 1 ]; then
    start_scraper
    scraped=$(run_wrk "$ROOT/bench/http/reserve.lua" "http://127.0.0.1:$PORT" "$CONNECTIONS")
    stop_scraper
    off=$(run_wrk "$ROOT/bench/http/reserve.lua" "http://127.0.0.1:$OFF_PORT" "$CONNECTIONS")
    SCRAPED_ALL="$SCRAPED_ALL $scraped"
    OFF_ALL="$OFF_ALL $off"
    # Each round's pair ran back to back: their ratio is the least noisy figure.
    SHARE_ALL="$SHARE_ALL $(awk -v a="$scraped" -v b="$off" 'BEGIN {print 100 * a / b}')"
    line="$line, metrics scraped 1/s $scraped req/s, metrics off $off req/s"
  fi
  if [ -n "$BASE" ]; then
    base=$(run_wrk "$ROOT/bench/http/reserve.lua" "http://127.0.0.1:$BASE_PORT" "$CONNECTIONS")
    BASE_ALL="$BASE_ALL $base"
    line="$line, BASE $base req/s"
    # With a BASE the batch endpoint alternates too, once a round.
    BATCH_ALL="$BATCH_ALL $(run_wrk "$ROOT/bench/http/reserve_batch.lua" "http://127.0.0.1:$PORT" "$BATCH_CONNECTIONS")"
    BASE_BATCH_ALL="$BASE_BATCH_ALL $(run_wrk "$ROOT/bench/http/reserve_batch.lua" "http://127.0.0.1:$BASE_PORT" "$BATCH_CONNECTIONS")"
  fi
  for i in "${!ACCESS_FORMATS[@]}"; do
    format=${ACCESS_FORMATS[$i]}
    rps=$(run_wrk "$ROOT/bench/http/reserve.lua" "http://127.0.0.1:${ACCESS_PORTS[$i]}" "$CONNECTIONS")
    : >"$ACCESS_DIR/$format.log"
    ACCESS_ALL[$format]="${ACCESS_ALL[$format]:-} $rps"
    line="$line, access log $format $rps req/s"
  done
  echo "$line"
  RL_ALL="$RL_ALL $rl"
  NGINX_ALL="$NGINX_ALL $ng"
done
[ -n "$BASE" ] || BATCH_ALL=$(run_wrk "$ROOT/bench/http/reserve_batch.lua" "http://127.0.0.1:$PORT" "$BATCH_CONNECTIONS")

kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID" || { echo "run.sh: ratelimiterd did not stop cleanly" >&2; exit 1; }
DAEMON_PID=""
for name in NOJOURNAL ALWAYS; do
  pid_var=${name}_PID
  kill -TERM "${!pid_var}"
  wait "${!pid_var}" || { echo "run.sh: ratelimiterd ($name) did not stop cleanly" >&2; exit 1; }
  printf -v "$pid_var" '%s' ""
done
if [ -n "$OFF_PID" ]; then
  kill -TERM "$OFF_PID"
  wait "$OFF_PID" || { echo "run.sh: ratelimiterd (metrics off) did not stop cleanly" >&2; exit 1; }
  OFF_PID=""
fi
if [ -n "$BASE" ]; then
  kill -TERM "$BASE_PID"
  wait "$BASE_PID" || true
  BASE_PID=""
fi
kill -QUIT "$NGINX_PID"
wait "$NGINX_PID" || true
NGINX_PID=""
for i in "${!ACCESS_PIDS[@]}"; do
  kill -TERM "${ACCESS_PIDS[$i]}"
  wait "${ACCESS_PIDS[$i]}" || { echo "run.sh: ratelimiterd (access log ${ACCESS_FORMATS[$i]}) did not stop cleanly" >&2; exit 1; }
done
ACCESS_PIDS=()

median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
RL_RPS=$(median <<<"$RL_ALL")
NGINX_RPS=$(median <<<"$NGINX_ALL")
BATCH_RPS=$(median <<<"$BATCH_ALL")

MODE="default config"
[ "$JOURNAL" = 1 ] || MODE="--no-journal"
awk -v rl="$RL_RPS" -v ng="$NGINX_RPS" -v batch="$BATCH_RPS" -v d="$DURATION" -v c="$CONNECTIONS" \
    -v rl_p99="$(median <<<"$RL_P99_ALL")" -v nj="$(median <<<"$NOJOURNAL_ALL")" -v nj_p99="$(median <<<"$NOJOURNAL_P99_ALL")" \
    -v al="$(median <<<"$ALWAYS_ALL")" -v al_p99="$(median <<<"$ALWAYS_P99_ALL")" -v mode="$MODE" \
    -v bc="$BATCH_CONNECTIONS" -v r="$ROUNDS" 'BEGIN {
  printf "POST /v1/reserve (4-requirement lease, ~300 B), wrk -t1 -c%s -d%s, server on 1 core, median of %s:\n", c, d, r
  printf "  ratelimiterd, %-17s %10.0f req/s  p99 %6.2f ms\n", mode, rl, rl_p99
  printf "  nginx constant                  %10.0f req/s\n", ng
  printf "  ratio to nginx                  %10.1f %%\n", 100 * rl / ng
  printf "  without journal and audit log   %10.0f req/s  p99 %6.2f ms  (the daemon above: %.1f %% of it, p99 %.2fx)\n", nj, nj_p99, 100 * rl / nj, rl_p99 / nj_p99
  printf "  journal_fsync always            %10.0f req/s  p99 %6.2f ms  (%.1f %% of nginx)\n", al, al_p99, 100 * al / ng
  printf "POST /v1/reserve/batch (256 leases), wrk -t1 -c%s -d%s:\n", bc, d
  printf "  ratelimiterd    %10.0f req/s = %.0f leases/s\n", batch, batch * 256
}'
if [ -n "$BASE" ]; then
  awk -v rl="$RL_RPS" -v base="$(median <<<"$BASE_ALL")" -v batch="$BATCH_RPS" \
      -v base_batch="$(median <<<"$BASE_BATCH_ALL")" -v rev="$BASE" 'BEGIN {
    printf "side by side with BASE %s (the same rounds, medians):\n", rev
    printf "  /v1/reserve        %10.0f vs %10.0f req/s = %.1f %%\n", rl, base, 100 * rl / base
    printf "  /v1/reserve/batch  %10.0f vs %10.0f leases/s = %.1f %%\n", batch * 256, base_batch * 256,
      100 * batch / base_batch
  }'
fi
if [ "$ACCESS_LOG" = 1 ]; then
  echo "access log on (log.access, to a file on disk), the same rounds, medians:"
  for format in "${ACCESS_FORMATS[@]}"; do
    # the daemon's last words: "access log: N lines written to PATH, M dropped"
    totals=$(sed -n 's/^ratelimiterd: access log: \([0-9]*\) lines written to .*, \([0-9]*\) dropped$/\1 \2/p' "$TMP/access-$format.log" | tail -1)
    awk -v rps="$(median <<<"${ACCESS_ALL[$format]}")" -v off="$RL_RPS" -v f="$format" -v t="$totals" 'BEGIN {
      split(t, n, " ")
      printf "  %-5s %10.0f vs %10.0f req/s off = %.1f %%  (%s lines written, %s dropped)\n", f, rps, off, 100 * rps / off, n[1], n[2]
    }'
  done
fi
if [ "$METRICS" = 1 ]; then
  if awk '$3 != 200 {bad = 1} END {exit !bad}' "$TMP/scrapes"; then
    echo "run.sh: a scrape of /metrics did not answer 200" >&2
  fi
  awk -v scraped="$(median <<<"$SCRAPED_ALL")" -v off="$(median <<<"$OFF_ALL")" -v share="$(median <<<"$SHARE_ALL")" \
      -v ms="$(awk '{print $1 * 1000}' "$TMP/scrapes" | median)" \
      -v bytes="$(awk '{print $2}' "$TMP/scrapes" | median)" -v n="$(wc -l <"$TMP/scrapes")" 'BEGIN {
    printf "POST /v1/reserve with GET /metrics scraped every second vs metrics off (the same rounds, medians):\n"
    printf "  metrics on, scraped 1/s  %10.0f req/s = %.1f %% of off\n", scraped, 100 * scraped / off
    printf "  metrics off              %10.0f req/s\n", off
    printf "  median of the rounds'"'"' own ratios: %.1f %% (target >= 95 %%)\n", share
    printf "  %d scrapes under load: median %.2f ms, %d bytes\n", n, ms, bytes
  }'
fi
