#!/usr/bin/env bash
# tests/fuzz/run.sh — build the libFuzzer harnesses and run them all.
#
#   tests/fuzz/run.sh                   the harnesses of tests/fuzz/focus for
#                                       60 s, the others for 20 s, nproc at a time
#   FUZZ_SECONDS=5 tests/fuzz/run.sh    a quick check
#
# Environment: BUILD (build directory, default build-fuzz, relative to the
# repository), FUZZ_SECONDS (per harness named in tests/fuzz/focus, default
# 60), FUZZ_SECONDS_OTHERS (every other harness, default a third of
# FUZZ_SECONDS, at least 1), JOBS (harnesses at once, default nproc), CC
# (default clang).
#
# 1. configures BUILD with clang, ASan+UBSan and libFuzzer's instrumentation
#    on everything (tests/fuzz/CMakeLists.txt) and builds the harnesses;
# 2. runs each harness once over its seed corpus and regression inputs
#    (tests/fuzz/corpus/<name>, tests/fuzz/regressions/<name>): -runs=0;
# 3. fuzzes each for FUZZ_SECONDS on a copy of those in a temporary directory
#    (the repository is never written to) and prints one line per harness.
# Exits non-zero if any input crashed, leaked, hit UB or timed out; the
# reproducer is then kept in the temporary directory, whose path is printed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_SECONDS_OTHERS=${FUZZ_SECONDS_OTHERS:-$(( FUZZ_SECONDS / 3 > 0 ? FUZZ_SECONDS / 3 : 1 ))}
JOBS=${JOBS:-$(nproc)}
export CC=${CC:-clang}
FUZZ_DIR=tests/fuzz
LIBFUZZER_FLAGS=(-timeout=10 -rss_limit_mb=2048)

HARNESSES=()
for source in "$FUZZ_DIR"/fuzz_*.c; do
    name=${source##*/fuzz_}
    HARNESSES+=("${name%.c}")
done

# ---- 1. build ---------------------------------------------------------------
echo "== configuring and building $BUILD with $CC"
cmake -S . -B "$BUILD" -DRL_FUZZ=ON -DRL_SANITIZE=address,undefined \
    -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link >/dev/null
targets=()
for name in "${HARNESSES[@]}"; do targets+=(--target "fuzz_$name"); done
cmake --build "$BUILD" -j "$JOBS" "${targets[@]}"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rl-fuzz.XXXXXX")
failed=0

# The seed and regression directories of a harness that exist.
inputs_of() {
    local name=$1
    echo "$FUZZ_DIR/corpus/$name"
    if [ -d "$FUZZ_DIR/regressions/$name" ]; then echo "$FUZZ_DIR/regressions/$name"; fi
}

dict_of() {
    case $1 in
        config) echo "$FUZZ_DIR/yaml.dict" ;;
        redis_*) echo "$FUZZ_DIR/redis.dict" ;;
        request_guard | token_set) echo "$FUZZ_DIR/http.dict" ;;
        record_file) echo "$FUZZ_DIR/record.dict" ;;
        audit_query | denials_query) echo "$FUZZ_DIR/query.dict" ;;
        audit_answer) echo "$FUZZ_DIR/json.dict" ;;
        audit_*) echo "$FUZZ_DIR/audit.dict" ;;
        *) echo "$FUZZ_DIR/json.dict" ;;
    esac
}

# Reports what a failed run left: the reproducer(s) and libFuzzer's last words.
report_failure() {
    local name=$1 dir=$2
    echo "---- $name failed; output tail ($dir/log):"
    tail -n 40 "$dir/log" | sed 's/^/    /'
    local artifact
    for artifact in "$dir"/artifacts/*; do
        [ -e "$artifact" ] || continue
        echo "    reproducer: $artifact"
        echo "    replay:     $BUILD/tests/fuzz/fuzz_$name $artifact"
    done
}

# ---- 2. regression check ----------------------------------------------------
echo "== regression check: every seed and regression input once"
for name in "${HARNESSES[@]}"; do
    dir="$WORK/check-$name"
    mkdir -p "$dir/artifacts"
    mapfile -t dirs < <(inputs_of "$name")
    if "$BUILD/tests/fuzz/fuzz_$name" -runs=0 "${LIBFUZZER_FLAGS[@]}" \
        -artifact_prefix="$dir/artifacts/" "${dirs[@]}" >"$dir/log" 2>&1; then
        printf '  %-16s ok (%s inputs)\n' "$name" "$(find "${dirs[@]}" -type f | wc -l)"
    else
        printf '  %-16s FAILED\n' "$name"
        report_failure "$name" "$dir"
        failed=1
    fi
done
if [ "$failed" -ne 0 ]; then
    echo "regression check failed; logs in $WORK"
    exit 1
fi

# ---- 3. fuzzing -------------------------------------------------------------
# The seconds a harness fuzzes: the full time for those whose code changed.
seconds_of() {
    if grep -qx "$1" "$FUZZ_DIR/focus"; then echo "$FUZZ_SECONDS"; else echo "$FUZZ_SECONDS_OTHERS"; fi
}

fuzz_one() {
    local name=$1 dir="$WORK/fuzz-$1"
    mkdir -p "$dir/corpus" "$dir/artifacts"
    local src
    while read -r src; do cp -R "$src"/. "$dir/corpus/"; done < <(inputs_of "$name")
    find "$dir/corpus" -type f | wc -l >"$dir/seeds"
    local rc=0
    "$BUILD/tests/fuzz/fuzz_$name" -max_total_time="$(seconds_of "$name")" "${LIBFUZZER_FLAGS[@]}" \
        -dict="$(dict_of "$name")" -artifact_prefix="$dir/artifacts/" -print_final_stats=1 \
        "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
    echo "$rc" >"$dir/rc"
}

# An interrupted run takes its fuzzers (the children of its jobs) with it.
stop_fuzzers() {
    local job
    for job in $(jobs -p); do
        pkill -TERM -P "$job" 2>/dev/null || true
        kill "$job" 2>/dev/null || true
    done
    wait
    rm -rf "$WORK"
    exit 130
}
trap stop_fuzzers INT TERM
echo "== fuzzing ${#HARNESSES[@]} harnesses, those of $FUZZ_DIR/focus for ${FUZZ_SECONDS}s and the others for ${FUZZ_SECONDS_OTHERS}s, $JOBS at a time (in $WORK)"
running=0
for name in "${HARNESSES[@]}"; do
    if [ "$running" -ge "$JOBS" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    fuzz_one "$name" &
    running=$((running + 1))
done
wait

printf '%-16s %12s %8s %10s %8s %6s %8s\n' harness runs seconds corpus new_files cov crashes
for name in "${HARNESSES[@]}"; do
    dir="$WORK/fuzz-$name"
    rc=$(cat "$dir/rc")
    # libFuzzer's last lines: "#N DONE cov: C ft: F corp: X/Yb ...", "Done N
    # runs in S second(s)", and (-print_final_stats, after a crash too)
    # "stat::number_of_executed_units: N".
    runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$dir/log" | tail -n 1)
    seconds=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$dir/log" | tail -n 1)
    corpus=$(sed -n 's/.*DONE .* corp: \([0-9]*\)\/.*/\1/p' "$dir/log" | tail -n 1)
    cov=$(sed -n 's/.*DONE .*cov: \([0-9]*\) .*/\1/p' "$dir/log" | tail -n 1)
    new_files=$(($(find "$dir/corpus" -type f | wc -l) - $(cat "$dir/seeds")))
    crashes=$(find "$dir/artifacts" -type f | wc -l)
    printf '%-16s %12s %8s %10s %8s %6s %8s\n' "$name" "${runs:--}" "${seconds:--}" \
        "${corpus:--}" "$new_files" "${cov:--}" "$crashes"
    if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then failed=1; fi
done
for name in "${HARNESSES[@]}"; do
    dir="$WORK/fuzz-$name"
    if [ "$(cat "$dir/rc")" -ne 0 ] || [ -n "$(ls -A "$dir/artifacts")" ]; then
        report_failure "$name" "$dir"
    fi
done

if [ "$failed" -ne 0 ]; then
    echo "FUZZING FOUND PROBLEMS: inputs and logs kept in $WORK"
    exit 1
fi
rm -rf "$WORK"
echo "all ${#HARNESSES[@]} harnesses clean"
