#!/bin/sh
# test_install.sh BUILD_DIR SOURCE_DIR CC [SANITIZERS]
#
# `cmake --install` of the build into a temp DESTDIR under a prefix of its
# own, then checks the tree (libraries, SONAME, headers, ratelimiter.pc,
# ratelimiterd, rlctl), that the shared library exports exactly the functions
# the installed headers declare RL_API (its insides stay hidden), and builds
# examples/llm_workload.c against it with pkg-config only, shared (rpath) and
# static, and runs both briefly.
set -eu
build=$1 src=$2 cc=$3 sanitize=${4:-}

fail() { echo "test_install: FAIL: $*" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=/opt/ratelimiter-test
dest=$tmp/dest
root=$dest$prefix

DESTDIR=$dest cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "cmake --install"; }

libdir=$(find "$root" -name libratelimiter.a -printf '%h\n' | head -n 1)
[ -n "$libdir" ] || fail "no libratelimiter.a under $root"
for f in "$libdir/libratelimiter.so" "$root/bin/ratelimiterd" "$root/bin/rlctl" \
         "$root/include/ratelimiter/limiter.h" "$root/include/ratelimiter/scheduler.h" \
         "$libdir/pkgconfig/ratelimiter.pc"; do
  [ -e "$f" ] || fail "missing $f"
done
[ -x "$root/bin/rlctl" ] && [ -x "$root/bin/ratelimiterd" ] || fail "binaries not executable"
soname=$(objdump -p "$libdir/libratelimiter.so" | awk '/SONAME/ {print $2}')
case $soname in libratelimiter.so.[0-9]*) ;; *) fail "SONAME is '$soname'" ;; esac
[ -e "$libdir/$soname" ] || fail "no $soname next to libratelimiter.so"
"$root/bin/rlctl" --version | grep -q '^rlctl ' || fail "installed rlctl --version"

# The export list is the public API: every RL_API declaration of the
# installed headers, and nothing else (no internal name, no function a
# header declares without RL_API). redis.h is not installed: the library has
# no Redis backend.
[ ! -e "$root/include/ratelimiter/redis.h" ] || fail "redis.h installed, but the library has no Redis backend"
nm -D --defined-only "$libdir/libratelimiter.so" | awk '$2 == "T" {print $3}' | sort >"$tmp/exported"
grep -ohE '^RL_API [^(]*\(' "$root/include/ratelimiter/"*.h |
  sed -E 's/.*[^a-zA-Z0-9_](rl_[a-z0-9_]+) *\($/\1/' | sort -u >"$tmp/declared"
[ -s "$tmp/declared" ] || fail "no RL_API declaration in the installed headers"
if ! diff "$tmp/declared" "$tmp/exported" >"$tmp/export.diff"; then
  cat "$tmp/export.diff" >&2
  fail "libratelimiter.so exports (>) other than the headers declare RL_API (<)"
fi
# Inside, the rest is rl__: every other global name of the static library
# (the same objects) says it is private, so a missing RL_API is seen. Names
# from "_" on are the compiler's and the sanitizers' (__odr_asan.*).
nm -g --defined-only "$libdir/libratelimiter.a" 2>/dev/null | awk 'NF == 3 && $2 ~ /[TDBR]/ {print $3}' |
  sort -u | comm -23 - "$tmp/exported" | grep -v -e '^rl__' -e '^_' >"$tmp/unprefixed" || true
[ ! -s "$tmp/unprefixed" ] || { cat "$tmp/unprefixed" >&2; fail "internal names without the rl__ prefix"; }
unmarked=$(grep -nE '^[A-Za-z].*[^a-zA-Z0-9_]rl_[a-z0-9_]+ *\(' "$root/include/ratelimiter/"*.h |
  grep -vE ':(RL_API |static inline|typedef|#)' || true)
[ -z "$unmarked" ] || { echo "$unmarked" >&2; fail "public functions declared without RL_API"; }

# The .pc file names the install prefix (not the DESTDIR); --define-prefix
# relocates it to where the file is, as for any staged tree.
grep -q "^prefix=$prefix\$" "$libdir/pkgconfig/ratelimiter.pc" || fail "ratelimiter.pc prefix: $(grep ^prefix= "$libdir/pkgconfig/ratelimiter.pc")"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
pkg_config() { pkg-config --define-prefix "$@"; }
pkg_config --exists ratelimiter || fail "pkg-config does not find ratelimiter"
[ "$(pkg_config --variable=libdir ratelimiter)" = "$libdir" ] || fail "libdir is $(pkg_config --variable=libdir ratelimiter)"
cflags=$(pkg_config --cflags ratelimiter)
libs=$(pkg_config --libs ratelimiter)
# Static: libratelimiter.a, then what ratelimiter.pc says it needs privately
# (Requires.private, Libs.private), those linked shared: Debian ships no
# static libcurl stack, so `pkg-config --static` cannot be taken whole.
pc=$libdir/pkgconfig/ratelimiter.pc
requires_private=$(pkg_config --print-requires-private ratelimiter)
[ -n "$requires_private" ] || fail "ratelimiter.pc has no Requires.private"
static_libs="$libdir/libratelimiter.a $(pkg-config --libs $requires_private) $(sed -n 's/^Libs.private://p' "$pc")"

# A sanitized build's library needs the sanitizer runtime in the program too.
extra=""
[ -z "$sanitize" ] || extra="-fsanitize=$sanitize"

cd "$tmp"
# shellcheck disable=SC2086  # the flags are lists
"$cc" -std=c11 -Wall -Wextra -Werror $extra "$src/examples/llm_workload.c" $cflags $libs \
  -Wl,-rpath,"$libdir" -o llm_workload_shared || fail "building the example (shared)"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror $extra "$src/examples/llm_workload.c" $cflags $static_libs \
  -o llm_workload_static || fail "building the example (static)"

# The shared one really loads the installed library.
ldd ./llm_workload_shared | grep -q "$libdir/$soname" || { ldd ./llm_workload_shared >&2; fail "not linked to $libdir/$soname"; }
if ldd ./llm_workload_static | grep -q libratelimiter; then fail "static build links libratelimiter.so"; fi

for prog in llm_workload_shared llm_workload_static; do
  ./$prog --jobs 40 --seconds 20 >"$prog.out" 2>&1 || { cat "$prog.out" >&2; fail "$prog exited $?"; }
  grep -Eq '^bigcloud +40 ' "$prog.out" || { cat "$prog.out" >&2; fail "$prog: bigcloud did not finish its 40 jobs"; }
  grep -q '^tinycloud ' "$prog.out" || { cat "$prog.out" >&2; fail "$prog: no tinycloud line"; }
  cat "$prog.out"
done
echo "test_install: ok ($root)"
