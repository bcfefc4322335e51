#!/usr/bin/env bash
# tests/gpu/harness.sh CHECK_KERNELS_CPU: the kernel checker's own plumbing,
# where no GPU is needed: it runs every CPU kernel, two runs agree exactly,
# and a changed output is caught (compare exits 1 and names it).
set -euo pipefail
bin=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-kcheck.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$bin" run "$work/a.bin"
"$bin" run "$work/b.bin"
"$bin" compare "$work/a.bin" "$work/b.bin" >"$work/same.txt"
grep -q " 0 over threshold" "$work/same.txt"
echo "ok   two CPU runs agree: $(tail -1 "$work/same.txt")"
# flip one float of the first output record (after its 64-byte name and 8-byte count)
cp "$work/a.bin" "$work/c.bin"
printf '\x00\x00\x80\x7f' | dd of="$work/c.bin" bs=1 seek=$((64 + 8 + 40)) conv=notrunc status=none
if "$bin" compare "$work/a.bin" "$work/c.bin" >"$work/diff.txt"; then
  echo "FAIL a changed output was not caught"; exit 1
fi
grep -q "^embed_fwd out .*FAIL" "$work/diff.txt"
echo "ok   a changed output is caught: $(grep FAIL "$work/diff.txt" | head -1)"
