#!/usr/bin/env bash
# bench/http/auth.sh — what a bearer token and TLS cost POST /v1/reserve:
# the same daemon build three ways, side by side under the same wrk load:
#   open     no tokens file, plain HTTP (as bench/http/run.sh measures it)
#   token    data.tokens_file set, every request carrying its token
#   https    the same over HTTPS (server.tls, a certificate made here)
#
#   bench/http/auth.sh     (DURATION=10s CONNECTIONS=64 ROUNDS=3 by default)
#
# Each daemon on core 0 (--threads 1, no journal or audit log), wrk on core
# 1, driven in turn ROUNDS times; prints the median requests/s of each and
# its share of "open". Keep-alive throughout: a TLS handshake is paid once
# per connection, so "https" is the cost of encrypting requests and answers.
# Needs: wrk, taskset, openssl.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${BUILD:-build}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
ROUNDS=${ROUNDS:-3}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
TOKEN=bench-$(openssl rand -hex 16)

for tool in wrk taskset openssl; do
  command -v "$tool" >/dev/null || { echo "auth.sh: $tool is missing (apt-get install wrk util-linux openssl)" >&2; exit 1; }
done
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target ratelimiterd >/dev/null

TMP=$(mktemp -d /tmp/rl_bench_auth.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

echo "$TOKEN" >"$TMP/data.tokens"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
  -keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null
base_config=$(cat "$ROOT/bench/http/config.yaml")
printf '%s\n' "$base_config" >"$TMP/open.yaml"
printf '%s\ndata:\n  tokens_file: %s\n' "$base_config" "$TMP/data.tokens" >"$TMP/token.yaml"
printf '%s\ndata:\n  tokens_file: %s\nserver:\n  tls: {cert_file: %s, key_file: %s}\n' \
  "$base_config" "$TMP/data.tokens" "$TMP/cert.pem" "$TMP/key.pem" >"$TMP/https.yaml"

declare -A PORT
for name in open token https; do
  mkdir -p "$TMP/$name"
  cp "$ROOT/bench/http/limits.json" "$TMP/$name/limits.json"
  taskset -c "$SERVER_CORE" "$BUILD/ratelimiterd" -c "$TMP/$name.yaml" --listen 127.0.0.1:0 \
    --registry "$TMP/$name/limits.json" --threads 1 --no-journal --no-audit 2>"$TMP/$name.log" &
  PIDS+=($!)
  for _ in $(seq 1 200); do
    PORT[$name]=$(sed -n 's/^ratelimiterd listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$TMP/$name.log")
    [ -n "${PORT[$name]}" ] && break
    sleep 0.05
  done
  [ -n "${PORT[$name]}" ] || { echo "auth.sh: the $name daemon did not start:" >&2; cat "$TMP/$name.log" >&2; exit 1; }
done

# Requests/sec from wrk's summary; fails on any answer that was not 2xx (a
# token refused would make the figure meaningless).
run_wrk() {
  local url=$1 token=$2 out
  out=$(RL_BEARER_TOKEN=$token taskset -c "$CLIENT_CORE" wrk -t1 -c"$CONNECTIONS" -d"$DURATION" \
    -s "$ROOT/bench/http/reserve.lua" "$url")
  if grep -q "Non-2xx" <<<"$out"; then echo "auth.sh: non-2xx answers from $url:" >&2; echo "$out" >&2; exit 1; fi
  awk '/^Requests\/sec:/ {print $2}' <<<"$out"
}

declare -A ALL
for round in $(seq 1 "$ROUNDS"); do
  open=$(run_wrk "http://127.0.0.1:${PORT[open]}" "")
  token=$(run_wrk "http://127.0.0.1:${PORT[token]}" "$TOKEN")
  https=$(run_wrk "https://127.0.0.1:${PORT[https]}" "$TOKEN")
  echo "round $round: open $open, token $token, https $https req/s"
  ALL[open]="${ALL[open]:-} $open"
  ALL[token]="${ALL[token]:-} $token"
  ALL[https]="${ALL[https]:-} $https"
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
open=$(median <<<"${ALL[open]}")
token=$(median <<<"${ALL[token]}")
https=$(median <<<"${ALL[https]}")
awk -v open="$open" -v token="$token" -v https="$https" -v d="$DURATION" -v c="$CONNECTIONS" -v r="$ROUNDS" 'BEGIN {
  printf "POST /v1/reserve (4-requirement lease), wrk -t1 -c%s -d%s, server on 1 core, median of %s:\n", c, d, r
  printf "  open (no tokens)         %10.0f req/s\n", open
  printf "  data token               %10.0f req/s  %5.1f %% of open\n", token, 100 * token / open
  printf "  data token over HTTPS    %10.0f req/s  %5.1f %% of open\n", https, 100 * https / open
}'
