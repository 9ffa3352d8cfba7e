#!/usr/bin/env bash
# bench/journal/run.sh — POST /v1/reserve with the memory backend's journal
# at each journal_fsync (off, everysec, always) and without a journal, side
# by side under the same wrk load, with the disk's own fdatasync latency
# (none: neither the journal nor the audit log; the others keep both).
#
#   bench/journal/run.sh     (DURATION=10s CONNECTIONS=64 ROUNDS=3 by default)
#
# Every daemon runs on core 0 (--threads 1), wrk on core 1; wrk drives them
# in turn, ROUNDS times, and the median req/s of each is printed with its
# share of off's. Each daemon's journal is in its own directory on the same
# file system (TMPDIR, /tmp by default: point it at the disk you will run
# on). With always, the daemon says at exit how many waiting calls each
# fdatasync answered (group commit).
# Needs: wrk, taskset, curl, dd.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${BUILD:-build}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
ROUNDS=${ROUNDS:-3}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
MODES=${MODES:-"none off everysec always"}

for tool in wrk taskset curl dd; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing (apt-get install wrk util-linux curl coreutils)" >&2; exit 1; }
done
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target ratelimiterd >/dev/null

TMP=$(mktemp -d "${TMPDIR:-/tmp}/rl_bench_journal.XXXXXX")
declare -A PID PORT ALL
cleanup() {
  for mode in $MODES; do
    [ -n "${PID[$mode]:-}" ] && kill -TERM "${PID[$mode]}" 2>/dev/null && wait "${PID[$mode]}" 2>/dev/null || true
  done
  rm -rf "$TMP"
}
trap cleanup EXIT

# The disk: 1000 synchronous 4 KiB writes, as a journal's group commit does.
dd if=/dev/zero of="$TMP/fsync_probe" bs=4k count=1000 oflag=dsync 2>"$TMP/dd.log"
FSYNC_US=$(awk '/copied/ {for (i = 1; i <= NF; i++) if ($i ~ /^s,?$/) t = $(i-1); gsub(",", ".", t); print t * 1000}' "$TMP/dd.log")

# The limits and settings of bench/http/run.sh.
cp "$ROOT/bench/http/limits.json" "$TMP/limits.json"
cp "$ROOT/bench/http/config.yaml" "$TMP/config.yaml"

run_wrk() {
  local url=$1 out
  out=$(taskset -c "$CLIENT_CORE" wrk -t1 -c"$CONNECTIONS" -d"$DURATION" -s "$ROOT/bench/http/reserve.lua" "$url")
  if grep -q "Non-2xx" <<<"$out"; then echo "run.sh: non-2xx answers from $url:" >&2; echo "$out" >&2; fi
  awk '/^Requests\/sec:/ {print $2}' <<<"$out"
}

for mode in $MODES; do
  mkdir -p "$TMP/$mode"
  cp "$TMP/limits.json" "$TMP/$mode/limits.json"
  # none: neither the journal nor the audit log (which the journal's writer writes).
  if [ "$mode" = none ]; then flags=(--no-journal --no-audit); else flags=(--journal-fsync "$mode"); fi
  taskset -c "$SERVER_CORE" "$BUILD/ratelimiterd" -c "$TMP/config.yaml" --listen 127.0.0.1:0 \
    --registry "$TMP/$mode/limits.json" --threads 1 "${flags[@]}" 2>"$TMP/$mode.log" &
  PID[$mode]=$!
  for _ in $(seq 1 200); do
    PORT[$mode]=$(sed -n 's/^ratelimiterd listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$TMP/$mode.log")
    [ -n "${PORT[$mode]}" ] && break
    sleep 0.05
  done
  [ -n "${PORT[$mode]}" ] || { echo "run.sh: ratelimiterd ($mode) did not start:" >&2; cat "$TMP/$mode.log" >&2; exit 1; }
  ALL[$mode]=""
done

for round in $(seq 1 "$ROUNDS"); do
  line="round $round:"
  for mode in $MODES; do
    rps=$(run_wrk "http://127.0.0.1:${PORT[$mode]}")
    ALL[$mode]="${ALL[$mode]} $rps"
    line="$line $mode $rps"
  done
  echo "$line req/s"
done
for mode in $MODES; do
  kill -TERM "${PID[$mode]}"
  wait "${PID[$mode]}" || { echo "run.sh: ratelimiterd ($mode) did not stop cleanly" >&2; exit 1; }
  PID[$mode]=""
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
OFF=$(median <<<"${ALL[off]}")
echo "POST /v1/reserve (4-requirement lease), wrk -t1 -c$CONNECTIONS -d$DURATION, server on 1 core, median of $ROUNDS:"
for mode in $MODES; do
  awk -v m="$mode" -v r="$(median <<<"${ALL[$mode]}")" -v off="$OFF" \
    'BEGIN { printf "  journal %-9s %10.0f req/s  %6.1f %% of off\n", m, r, 100 * r / off }'
done
echo "  disk: one 4 KiB write + fdatasync = $(awk -v t="$FSYNC_US" 'BEGIN { printf "%.0f", t }') us (dd oflag=dsync, 1000 writes)"
grep -h "fdatasyncs answered" "$TMP/always.log" | sed 's/^ratelimiterd: /  always: /' || true
