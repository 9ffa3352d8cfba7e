#!/bin/sh
# Makes docs/console.png, the picture of the web console in docs/console.md: a daemon
# (the build's) on a free port in a temporary directory, the example limits
# and a monthly budget, a little traffic with some denials, then Debian's
# headless Chromium takes the page with the budget's audit open.
#   docs/console-screenshot.sh [BUILD_DIR]     (default: build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
daemon="$root/$build/ratelimiterd"
dir=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT INT TERM

cp "$root/examples/limits.json" "$dir/limits.json"
"$daemon" --listen 127.0.0.1:0 --registry "$dir/limits.json" --threads 1 2>"$dir/stderr" &
pid=$!
for _ in $(seq 50); do grep -q "listening on" "$dir/stderr" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$dir/stderr")
url="http://127.0.0.1:$port"
call() { curl -s -X "$1" "$url$2" ${3:+-d "$3"} >/dev/null; }
lease() { printf '01JD5Z8Q6X4W8N1V0M9R7T%04d' "$1"; }

call PUT /v1/admin/limits '{"key":"tenant:acme:spend:monthly","kind":"budget","capacity":50000000,"period":"month","timezone":"UTC","timeout_seconds":600,"unit":"usd_micros","description":"acme monthly spend"}'
i=1
while [ $i -le 24 ]; do
  l=$(lease $i)
  call POST /v1/reserve "{\"lease_id\":\"$l\",\"job_id\":\"job-$i\",\"requirements\":[{\"key\":\"global:llm:openai:gpt-4o:rpm\",\"amount\":1},{\"key\":\"global:llm:openai:gpt-4o:tpm\",\"amount\":24000},{\"key\":\"tenant:acme:spend:monthly\",\"amount\":1500000}]}"
  [ $((i % 4)) -eq 0 ] || call POST /v1/complete "{\"lease_id\":\"$l\",\"actuals\":[{\"key\":\"global:llm:openai:gpt-4o:tpm\",\"actual_amount\":$((9000 + i * 311))},{\"key\":\"tenant:acme:spend:monthly\",\"actual_amount\":$((700000 + i * 23000))}]}"
  i=$((i + 1))
done
call POST /v1/reserve "{\"lease_id\":\"$(lease 101)\",\"job_id\":\"job-101\",\"requirements\":[{\"key\":\"global:llm:openai:gpt-4o:tpm\",\"amount\":700000}]}"
call POST /v1/reserve/batch "{\"requests\":[{\"lease_id\":\"$(lease 102)\",\"requirements\":[{\"key\":\"global:llm:anthropic:claude-sonnet:rpm\",\"amount\":1}]},{\"lease_id\":\"$(lease 103)\",\"requirements\":[{\"key\":\"tenant:acme:spend:monthly\",\"amount\":40000000}]}]}"
call POST /v1/reserve "{\"lease_id\":\"$(lease 104)\",\"requirements\":[{\"key\":\"tenant:tenant_a:llm:daily_tokens\",\"amount\":6000000}]}"
call PUT /v1/admin/limits '{"key":"global:llm:openai:gpt-4o:rpm","kind":"rolling","capacity":20,"window_seconds":60,"unit":"requests"}'
call POST /v1/reserve "{\"lease_id\":\"$(lease 105)\",\"job_id\":\"job-105\",\"requirements\":[{\"key\":\"global:llm:openai:gpt-4o:rpm\",\"amount\":1}]}"

chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$dir/profile" --hide-scrollbars \
  --window-size=1400,1240 --virtual-time-budget=4000 --screenshot="$root/docs/console.png" \
  "$url/console#audit=tenant:acme:spend:monthly" 2>/dev/null
echo "wrote docs/console.png"
