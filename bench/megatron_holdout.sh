#!/usr/bin/env bash
# megatron_holdout.sh: the cost model against published end-to-end training
# throughput it was NOT fitted to.  For each configuration of Narayanan et al.,
# "Efficient Large-Scale Language Model Training on GPU Clusters Using
# Megatron-LM" (SC21), Table 1 (A100 80 GB, DGX A100 nodes of 8 GPUs on NVLink 3
# / NVSwitch, 8 HDR 200 Gb/s InfiniBand NICs a node; seq 2048, vocab 51200,
# 16-bit, full activation recompute), writes a temporary plan, runs
# `weft simulate --backend cuda` on it and prints the predicted TFLOP/s per GPU
# next to the published figure (both in the paper's FLOP count, equation 3).  Microbatch sizes and interleaving as listed in
# the memory and communication issue (17).  Nothing is written outside a
# temporary folder, which is removed on exit.
#
#   bench/megatron_holdout.sh [WEFT]        (default build/compiler/weft)
set -uo pipefail
cd "$(dirname "$0")/.."
WEFT=${1:-build/compiler/weft}
[ -x "$WEFT" ] || { echo "megatron_holdout.sh: $WEFT not built (bash scripts/build.sh)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-holdout.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# name heads hidden layers tp pp dp global micro virtual published_tflops
configs="
1.7B 24 2304 24 1 1 32 512 16 1 137
3.6B 32 3072 30 2 1 32 512 16 1 138
7.5B 32 4096 36 4 1 32 512 16 1 142
18.4B 48 6144 40 8 1 32 1024 8 1 135
39.1B 64 8192 48 8 2 32 1536 4 1 138
76.1B 80 10240 60 8 4 32 1792 2 3 140
145.6B 96 12288 80 8 8 24 2304 2 2 148
310.1B 128 16384 96 8 16 15 2160 1 2 155
529.6B 128 20480 105 8 35 9 2520 1 3 163
1008B 160 25600 128 8 64 6 3072 1 1 163
"
printf '%-8s %4s %4s %4s %6s %10s %10s %7s  %s\n' model tp pp dp micro predicted published ratio note
echo "$configs" | while read -r name heads hidden layers tp pp dp global micro virtual pub; do
    [ -n "$name" ] || continue
    world=$((tp * pp * dp))
    nodes=$(( (world + 7) / 8 ))
    schedule=1f1b
    [ "$virtual" -gt 1 ] && schedule=interleaved
    id=$(printf '%s' "$name" | tr . _)
    plan="$tmp/megatron_$id.lua"
    cat > "$plan" <<PLAN
local w = weft
return w.plan {
  name = "megatron_$id",
  model = w.gpt2 { layers = $layers, hidden = $hidden, heads = $heads, seq = 2048, vocab = 51200 },
  cluster = w.cluster { nodes = $nodes, devices_per_node = 8, device = w.gpu.A100_80GB,
                        intra_link = w.link.NVLINK3, inter_link = w.link.IB_HDR },
  mesh = { dp = $dp, tp = $tp, pp = $pp },
  pipeline = { schedule = "$schedule", virtual = $virtual },
  batch = { micro = $micro, global = $global },
  precision = "bf16",
  recompute = "full",
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 6e-5 },
  train = { steps = 1 },
  data = { train = "data/train.bin" },
}
PLAN
    note=""
    [ $((hidden / heads)) -gt 128 ] && note="head size $((hidden / heads)): the CUDA attention kernels stop at 128"
    out=$("$WEFT" simulate --backend cuda "$plan" 2>&1)
    # the paper counts FLOPs its own way (its equation 3, recompute included):
    # 96 B s l h^2 (1 + s / 6h + V / 16lh) an iteration; so the prediction is
    # that count over the simulated iteration time, per GPU
    iter=$(printf '%s\n' "$out" | sed -n 's/^iteration \([0-9.e+]*\) s:.*/\1/p')
    pred=""
    [ -n "$iter" ] && pred=$(awk -v B="$global" -v l="$layers" -v h="$hidden" -v t="$iter" -v n="$world" 'BEGIN {
        s = 2048; V = 51200
        F = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
        printf "%.1f", F / t / n / 1e12 }')
    if [ -z "$pred" ]; then
        printf '%-8s %4s %4s %4s %6s %10s %10s %7s  %s\n' "$name" "$tp" "$pp" "$dp" "$micro" "-" "$pub" "-" \
            "$(printf '%s' "$out" | head -1)"
        continue
    fi
    ratio=$(awk -v a="$pred" -v b="$pub" 'BEGIN { printf "%.2f", a / b }')
    printf '%-8s %4s %4s %4s %6s %10s %10s %7s  %s\n' "$name" "$tp" "$pp" "$dp" "$micro" "$pred" "$pub" "$ratio" "$note"
done
