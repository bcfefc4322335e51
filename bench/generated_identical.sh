#!/usr/bin/env bash
# Are the generated programs byte-identical to an earlier compiler's?
#
#   bash bench/generated_identical.sh [BASE]      (BASE: a git revision, default HEAD)
#
# Builds `weft` at BASE (in a temporary git worktree) and in this working tree,
# and with each compiles, into the same fixed folder: every plan in plans/ for
# both backends, and every layout of the equivalence suites (equivalence.sh,
# llama.sh, precision.sh, pipedream.sh, resume.sh, through tests/e2e/lib.sh's
# WEFT_SNAPSHOT mode, also for --backend cuda).  Prints the files that differ
# (diff -r) and exits 1 if any do.  Compiles only: nothing is built or run.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${1:-HEAD}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/weft-identical.XXXXXX")
trap 'git worktree remove --force "$TMP/base" >/dev/null 2>&1 || true; rm -rf "$TMP"' EXIT

build_weft() {  # build_weft SRC BUILD
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$2" --target weft -j"$(nproc)" >/dev/null
}

# snapshot WEFT OUT: every output of this compiler under $TMP/snap, moved to
# OUT; both compilers read this tree's plans and test scripts
snapshot() {
  local weft=$1 out=$2 snap=$TMP/snap
  rm -rf "$snap"; mkdir -p "$snap/out/plans"
  # the generated CMakeLists name the runtime folder: the same for both
  export WEFT_RUNTIME=/weft-runtime WEFT=$weft WEFT_SNAPSHOT=$snap
  (for plan in plans/*.lua; do
     for backend in cpu cuda; do
       n=$(basename "$plan" .lua).$backend
       "$weft" compile "$plan" -o "$snap/out/plans/$n" --backend $backend >"$snap/out/plans/$n.log" 2>&1 || true
     done
   done
   for t in equivalence llama precision pipedream resume; do
     [ -f tests/e2e/$t.sh ] && bash tests/e2e/$t.sh >/dev/null 2>&1 || true
   done)
  rm -rf "$snap/out/"*/*/build
  mv "$snap/out" "$out"
}

git worktree add --detach "$TMP/base" "$BASE" >/dev/null 2>&1
build_weft "$TMP/base" "$TMP/base-build"
build_weft . "$TMP/new-build"
snapshot "$TMP/base-build/compiler/weft" "$TMP/base-out"
snapshot "$TMP/new-build/compiler/weft" "$TMP/new-out"
n=$(find "$TMP/new-out" -type f | wc -l)
if diff -r "$TMP/base-out" "$TMP/new-out" >"$TMP/diff" 2>&1; then
  echo "identical: $n files from $BASE and from the working tree"
else
  sed "s|$TMP/||g" "$TMP/diff" | head -n "${DIFF_LINES:-200}"
  echo "DIFFERENT: $(grep -c '^diff\|^Only' "$TMP/diff" || true) file(s) differ of $n"
  exit 1
fi
