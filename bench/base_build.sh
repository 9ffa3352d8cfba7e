# bench/base_build.sh — sourced by the benchmarks that measure this tree side
# by side with another revision (BASE): a worktree of it, built as this one
# is. Needs ROOT (the repository) set by the caller, and git.
#
#   base_build REV DIR   the ratelimiterd of REV at DIR/build/ratelimiterd
#   base_remove DIR      the worktree gone (for the caller's cleanup)

base_build() {
  local rev=$1 dir=$2
  git -C "$ROOT" worktree add --detach "$dir" "$rev" >/dev/null 2>&1 ||
    { echo "base_build: no worktree of $rev" >&2; return 1; }
  cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$dir/build" -j "$(nproc)" --target ratelimiterd >/dev/null
}

base_remove() { git -C "$ROOT" worktree remove --force "$1" 2>/dev/null || true; }
