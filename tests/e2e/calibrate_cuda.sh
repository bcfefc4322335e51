#!/usr/bin/env bash
# weft calibrate --backend cuda on the CUDA emulator (no GPU here):
# runtime/tools/calibrate_cuda.c built against the emulated runtime
# (WEFT_CALIBRATE_CUDA), its NCCL all-reduce over two emulated devices.
#   1. the measurement runs and the cluster file has its GEMM rows (4 shapes
#      at 2 widths in --quick), the attention rates and NCCL on 2 GPUs;
#   2. `weft simulate --backend cuda --calibration` reads it and the
#      prediction changes; with every GEMM rate scaled by 1, 2 and 4 the
#      forward time f (GEMMs G plus the rest R, which the rates do not touch)
#      is R + G, R + G/2, R + G/4, so f1 - f2 = 2 (f2 - f4) = G/2.  f is
#      printed to 0.001 ms (error 0.0005 each), so f1 - 3 f2 + 2 f4 is zero
#      within 6 x 0.0005 = 0.003 ms; and G > 0 by far more than that.  The
#      same with NCCL's bus bandwidth and a tp 2 plan's collectives
#      (latency steps fixed, bytes / bandwidth scaled);
#   3. a broken measurement (the first GEMM's time NaN, or zero: infinite
#      TFLOP/s) is refused with a message naming the row, and the existing
#      cluster file is left as it was; simulate refuses such a file too, and
#      a GPU file on the CPU backend.
set -euo pipefail
: "${WEFT:?}" "${WEFT_CALIBRATE_CUDA:?}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-calcuda.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export WF_EMU_DEVICES=2

"$WEFT" calibrate --backend cuda --gpus 2 --quick -o "$tmp/cluster.lua" > "$tmp/log" 2>&1 ||
    { cat "$tmp/log"; fail "weft calibrate --backend cuda failed"; }
cat "$tmp/log"
cat "$tmp/cluster.lua"
grep -q 'backend = "cuda"' "$tmp/cluster.lua" || fail "no backend line"
rows=$(grep -cE '^    \{ [0-9]+, [0-9]+, [0-9]+, ' "$tmp/cluster.lua")
[ "$rows" -eq 8 ] || fail "expected 8 GEMM rows, found $rows"
grep -q 'attention = { head = 32' "$tmp/cluster.lua" || fail "no attention line"
grep -q 'nccl = { gpus = 2,' "$tmp/cluster.lua" || fail "no NCCL line"
echo "ok: measured and written"

plan() {  # name tp
    cat > "$tmp/$1.lua" <<PLAN
return weft.plan {
  name = "$1",
  model = weft.gpt2 { layers = 4, hidden = 1024, heads = 32, seq = 1024, vocab = 51200 },
  cluster = weft.cluster { nodes = 1, devices_per_node = $2, device = weft.gpu.A100_80GB },
  mesh = { dp = 1, tp = $2 },
  batch = { micro = 4, global = 8 },
  precision = "bf16",
  optimizer = weft.adamw { lr = 1e-4 },
  data = { train = "unused.bin" },
}
PLAN
}
plan one 1
plan two 2
# scale every GEMM row's TFLOP/s (4th number), or NCCL's bus_gbs, by $2
scaled() {
    awk -v s="$2" -v what="$3" '
        what == "gemm" && /^    \{ [0-9]+, [0-9]+, [0-9]+, / {
            sub(/ },$/, ""); n = split($0, f, ", "); printf "    { %s, %s, %s, %.17g },\n", substr(f[1], 7), f[2], f[3], f[4] * s; next }
        what == "nccl" && /nccl = / { match($0, /bus_gbs = [0-9.e+-]+/); v = substr($0, RSTART + 10, RLENGTH - 10)
            sub(/bus_gbs = [0-9.e+-]+/, "bus_gbs = " sprintf("%.17g", v * s)) }
        { print }' "$tmp/cluster.lua" > "$tmp/$1.lua"
}
field() {  # plan calibration-or-empty sed-pattern
    local cal=()
    [ -n "$2" ] && cal=(--calibration "$2")
    "$WEFT" simulate --backend cuda "$tmp/$1.lua" "${cal[@]}" | sed -n "$3" | head -1
}
fwd='s/.*chunk: forward \([0-9.]*\) ms.*/\1/p'
tpc='s/.*tp collectives \([0-9.]*\) ms.*/\1/p'
for s in 1 2 4; do scaled "g$s" "$s" gemm; scaled "n$s" "$s" nccl; done
f0=$(field one "" "$fwd")
f1=$(field one "$tmp/g1.lua" "$fwd")
f2=$(field one "$tmp/g2.lua" "$fwd")
f4=$(field one "$tmp/g4.lua" "$fwd")
echo "forward ms: model $f0, measured rates x1 $f1, x2 $f2, x4 $f4"
awk -v a="$f0" -v b="$f1" 'BEGIN { exit !(a != b) }' || fail "the calibration did not change the prediction"
awk -v a="$f1" -v b="$f2" -v c="$f4" 'BEGIN { r = a - 3 * b + 2 * c; if (r < 0) r = -r
    exit !(r <= 0.003 && a - b > 1) }' || fail "GEMM time not inversely proportional to the measured rate"
c1=$(field two "$tmp/n1.lua" "$tpc")
c2=$(field two "$tmp/n2.lua" "$tpc")
c4=$(field two "$tmp/n4.lua" "$tpc")
echo "tp collectives ms at NCCL bus x1 $c1, x2 $c2, x4 $c4"
awk -v a="$c1" -v b="$c2" -v c="$c4" 'BEGIN { r = a - 3 * b + 2 * c; if (r < 0) r = -r
    exit !(r <= 0.003 && a - b > 0.01) }' || fail "tp collective time not following the measured bus bandwidth"
echo "ok: simulate follows the measured GEMM rates and NCCL bandwidth"

echo "keep me" > "$tmp/kept.lua"
for fault in nan zero; do
    want=$([ $fault = nan ] && echo nan || echo inf)
    if WEFT_CALIBRATE_FAULT=$fault "$WEFT" calibrate --backend cuda --gpus 2 --quick -o "$tmp/kept.lua" \
        > "$tmp/log" 2>&1; then
        fail "a $fault GEMM time was accepted"
    fi
    cat "$tmp/log"
    grep -q "gemm row 1: TFLOP/s is -*$want, not a positive finite number" "$tmp/log" || fail "no message for $fault"
    grep -q "kept.lua is unchanged" "$tmp/log" || fail "no 'unchanged' for $fault"
    [ "$(cat "$tmp/kept.lua")" = "keep me" ] || fail "the cluster file was overwritten after a $fault measurement"
done
sed 's/^\(    { [0-9]*, [0-9]*, [0-9]*, \)[0-9.e+-]* },$/\10 },/' "$tmp/cluster.lua" > "$tmp/zero.lua"
if "$WEFT" simulate --backend cuda "$tmp/one.lua" --calibration "$tmp/zero.lua" > "$tmp/log" 2>&1; then
    fail "simulate accepted a zero GEMM rate"
fi
grep -q "gemm row 1: TFLOP/s is 0" "$tmp/log" || { cat "$tmp/log"; fail "no message for a zero rate"; }
if "$WEFT" simulate "$tmp/one.lua" --calibration "$tmp/cluster.lua" > "$tmp/log" 2>&1; then
    fail "a GPU calibration was taken on the CPU backend"
fi
grep -q "measured on GPUs" "$tmp/log" || { cat "$tmp/log"; fail "no message for the CPU backend"; }
echo "ok: broken measurements refused"
echo "PASS"
