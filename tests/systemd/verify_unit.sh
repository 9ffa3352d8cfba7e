#!/bin/sh
# verify_unit.sh BUILD_DIR SOURCE_DIR CMAKE
#
# examples/ratelimiterd.service as systemd reads it, and the daemon started
# the way it says.
#
# `systemd-analyze verify` must print nothing about the unit: it reports an
# unknown key, a bad value or an unknown system call group as a warning and
# still exits 0, so any output fails the test. verify also checks that each
# Exec line's program exists. The unit runs /usr/local/bin/ratelimiterd,
# where `make install` puts it with its default PREFIX; rather than install
# into the machine's /usr/local, the test installs this build into a temp
# DESTDIR with that prefix (as make install does), checks that the daemon
# landed where the unit says, and verifies a copy of the unit whose
# ExecStart names that installed file: the one change, so that everything
# else (the hardening, the directories, ExecReload's /bin/kill) is checked
# as shipped.
#
# Then it runs the installed daemon with the unit's own ExecStart arguments
# (/etc/ratelimiter and /var/lib/ratelimiter moved into the temp dir): it
# must start, put its data in the state directory, answer /healthz, take
# ExecReload's signal (the tokens files read again) and exit 0 on SIGTERM,
# systemd's stop signal.
#
# Skipped (77) only when systemd-analyze is not installed (Debian: the
# systemd package). Not tested here: the sandbox itself, which needs systemd
# as PID 1.
set -eu
build=$1 src=$2 cmake=${3:-cmake}
unit=$src/examples/ratelimiterd.service
daemon=/usr/local/bin/ratelimiterd

fail() { echo "verify_unit: FAIL: $*" >&2; exit 1; }

if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "verify_unit: SKIP: systemd-analyze is not installed (Debian: apt-get install systemd)"
  exit 77
fi

tmp=$(mktemp -d)
pid=""
cleanup() {
  [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# The unit names the daemon where make install's default PREFIX puts it.
grep -q '^PREFIX ?= /usr/local$' "$src/Makefile" || fail "the Makefile's default PREFIX is no longer /usr/local"
execstart=$(sed -n 's/^ExecStart=//p' "$unit")
[ "$(printf '%s\n' "$execstart" | wc -l)" -eq 1 ] || fail "not one ExecStart= line"
case $execstart in "$daemon "*) ;; *) fail "ExecStart does not run $daemon: $execstart" ;; esac
DESTDIR=$tmp/root "$cmake" --install "$build" --prefix /usr/local >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "cmake --install"; }
[ -x "$tmp/root$daemon" ] || fail "make install puts no $daemon"

mkdir "$tmp/unit"
sed "s#^ExecStart=$daemon #ExecStart=$tmp/root$daemon #" "$unit" >"$tmp/unit/ratelimiterd.service"
grep -q "^ExecStart=$tmp/root$daemon " "$tmp/unit/ratelimiterd.service" || fail "could not point ExecStart at the install"
(cd "$tmp" && systemd-analyze verify --man=no "$tmp/unit/ratelimiterd.service") >"$tmp/verify.out" 2>&1 ||
  { cat "$tmp/verify.out" >&2; fail "systemd-analyze verify failed"; }
if [ -s "$tmp/verify.out" ]; then
  cat "$tmp/verify.out" >&2
  fail "systemd-analyze verify has something to say about the unit"
fi
echo "verify_unit: systemd-analyze verify: no warnings ($(systemd-analyze --version | head -n 1))"

# The unit's command line, its directories moved into the temp dir.
etc=$tmp/etc state=$tmp/state
mkdir -p "$etc" "$state"
(umask 077 && openssl rand -hex 32 >"$etc/admin.tokens") || fail "openssl rand"
cat >"$etc/config.yaml" <<EOF
server:
  listen_addr: "127.0.0.1:0"
admin:
  tokens_file: "$etc/admin.tokens"
EOF
args=$(printf '%s\n' "$execstart" | sed -e "s#^$daemon #$tmp/root$daemon #" \
  -e "s#/etc/ratelimiter/#$etc/#g" -e "s#/var/lib/ratelimiter/#$state/#g")
set -f
# shellcheck disable=SC2086  # the unit's arguments, split as systemd splits them (no quotes)
$args 2>"$tmp/daemon.err" &
pid=$!
set +f
wait_for() { # wait_for PATTERN: a line of the daemon's stderr, 10 s at most
  i=0
  while ! grep -q "$1" "$tmp/daemon.err"; do
    i=$((i + 1))
    if [ "$i" -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
      cat "$tmp/daemon.err" >&2
      fail "no \"$1\" from the daemon"
    fi
    sleep 0.1
  done
}
wait_for "listening on "
addr=$(sed -n 's/^ratelimiterd listening on \([^ ]*\) .*/\1/p' "$tmp/daemon.err")
"$tmp/root/usr/local/bin/rlctl" --url "http://$addr" health >"$tmp/health" || fail "rlctl health: exit $?"
grep -q '"ok":true' "$tmp/health" || fail "/healthz: $(cat "$tmp/health")"
if [ ! -f "$state/journal" ] || [ ! -d "$state/audit" ]; then
  ls -la "$state" >&2
  fail "the journal and audit/ are not in the state directory"
fi

reload=$(sed -n 's/^ExecReload=//p' "$unit")
MAINPID=$pid sh -c "$reload" || fail "ExecReload ($reload) exited $?"
wait_for "admin.tokens_file reloaded"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=""
[ "$status" -eq 0 ] || { cat "$tmp/daemon.err" >&2; fail "the daemon exited $status on SIGTERM"; }
echo "verify_unit: ok (started with the unit's arguments, /healthz answered, reloaded, stopped with 0)"
