#!/usr/bin/env bash
# weft plan: the search over layouts.  Every plan it returns is accepted by
# `weft check` unchanged and fits (simulate: no stage "does not fit"); the
# search is deterministic (two runs byte-identical, table and plan); requests
# that cannot be met end with exit 1 and the nearest feasible change.  No MPI
# run: everything here is compile-time (a few seconds).
source "$(dirname "$0")/lib.sh"

# bounds_over FILE [PATTERN]: the builds WEFT_PLAN_DEBUG printed a memory
# lower bound for ("debug: bound B planned P: ..."), matching PATTERN (awk
# regex, default every one), as "count over tightest": how many, how many
# with the bound above the planned bytes (each printed to stderr), and the
# largest bound / planned
bounds_over() {
  awk -v re="${2:-^debug: bound}" '$0 ~ re && /^debug: bound/ { b = $3 + 0; p = $5; sub(":", "", p); p += 0; n++
    if (b > p) { v++; print "over:", $0 > "/dev/stderr" } if (p > 0 && b / p > t) t = b / p }
    END { printf "%d %d %.3f\n", n, v, t }' "$1"
}
# bound_never_over LABEL FILE PATTERN MIN: more than MIN builds of FILE
# matching PATTERN, and none with its memory lower bound above the plan
bound_never_over() {
  local n over
  read -r n over _ < <(bounds_over "$2" "$3")
  check "$1: the memory lower bound is never above the planned bytes ($over of $n builds over)" \
    bash -c "[ '$n' -gt '$4' ] && [ '$over' = 0 ]"
}
# split_predicted FILE MIN LABEL: the bound's predicted stage split is the
# build's for more than MIN pipelined builds of FILE, and for none it is not
split_predicted() {
  local n_pred n_miss
  n_pred=$(grep -c '^debug: split predicted' "$1" || true)
  n_miss=$(grep -c '^debug: split \(mispredicted\|unknown\)' "$1" || true)
  check "$3the bound's predicted stage split is the build's ($n_pred pipelined builds, $n_miss not)" \
    bash -c "[ '$n_pred' -gt $2 ] && [ '$n_miss' = 0 ]"
}

# 1. A GPU cluster where memory decides: an 8-layer, 4096-wide GPT on 32 H100s
# (4 nodes of 8), global batch 256.  The plan's own 64-stage mesh does not
# suit 8 layers: weft plan lays the model out afresh.
mid=(plans/gpt_1t.lua --set model.layers=8 --set model.hidden=4096 --set model.heads=32
     --set batch.global=256 --gpus 32 --top 4)
rc=0
WEFT_PLAN_DEBUG=1 "$WEFT" plan "${mid[@]}" -o "$WORK/mid.lua" >"$WORK/mid.txt" 2>"$WORK/mid.err" || rc=$?
cat "$WORK/mid.txt"
check "weft plan finds a layout for 8 x 4096 on 32 H100s (exit $rc)" test "$rc" = 0
# the memory lower bound against what the memory model plans for every build
# (WEFT_PLAN_DEBUG), interleaved layouts included
read -r n_built n_over _ < <(bounds_over "$WORK/mid.err")
check "the memory lower bound is never above the planned bytes ($n_over of $n_built builds over)" \
  bash -c "[ '$n_built' -gt 5 ] && [ '$n_over' = 0 ]"
# ZeRO-3 builds too (their gather and bucket buffers, zero_buffer_bound):
# the 1T model on 3072 A100s, where layouts need ZeRO-3, priced to 60 builds
WEFT_PLAN_DEBUG=1 "$WEFT" plan plans/paper/narayanan_1008b.lua --backend cuda --top 1 --max-priced 60 \
  >/dev/null 2>"$WORK/z3.err" || true
bound_never_over "zero3" "$WORK/z3.err" '^debug: bound .* zero 3 ' 5
read -r n_1t all_over _ < <(bounds_over "$WORK/z3.err")
check "1008B: the memory lower bound is never above the planned bytes ($all_over of $n_1t builds over)" \
  bash -c "[ '$n_1t' -gt 40 ] && [ '$all_over' = 0 ]"
# ... and close to them, stage by stage, for every pipelined build: it
# leaves out only a stage's recompute region, scratch (tokens, kernel,
# receive buffers), the runtime's tables and what first fit adds to ZeRO's
# arenas past a one-layer stage's (zero_arena: at tp 4, 512 MiB buckets, a
# 21-layer stage's bucket arena is 1.80e9 elements, a one-layer stage's
# 1.47e9: 0.61 GiB in 2 bytes): under 2 GiB of 80 (the largest 1.7 GiB, at
# tp 4 ZeRO-3).  Without 16-bit storage's float scratch the gap was 6 GiB
# and builds that do not fit were built; with 1F1B's slots for ZB-H1, 53 GiB;
# with ZeRO's buffers bounded by two layer parameters (fc1 + fc2) where
# first fit lays a whole layer's gathers side by side, 3.6 GiB.
gap_of() {  # FILE PATTERN: builds, largest plan - bound in GiB, that build
  awk -v re="$2" '/^debug: bound/ && $0 ~ re { b = $3 + 0; p = $5; sub(":", "", p); d = (p - b) / 2^30
    if (d > m) { m = d; w = $0 } n++ } END { printf "%d %.2f %s", n, m, w }' "$1"
}
gap=$(gap_of "$WORK/z3.err" ' pp ([2-9]|[1-9][0-9]+) ')
check "1008B: every pipelined build's bound is within 2 GiB of its plan (builds, largest gap GiB, build: $gap)" \
  awk -v g="$gap" 'BEGIN { split(g, a, " "); exit !(a[1] > 40 && a[2] < 2) }'
# one stage (pp 1): forward and backward are one function, the gathers run
# from one into the other; its arenas come from a one-stage, one-layer
# build (the embedding's and head's buffers there, a layer's beside them):
# within 3.5 GiB (the largest 2.9 at tp 4, 2048 MiB buckets, whose
# 128-layer bucket arena packs across layers; 8.7 with two parameters)
gap1=$(gap_of "$WORK/z3.err" ' pp 1 .* zero 3 ')
check "1008B: every one-stage ZeRO-3 build's bound is within 3.5 GiB of its plan ($gap1)" \
  awk -v g="$gap1" 'BEGIN { split(g, a, " "); exit !(a[1] > 0 && a[2] < 3.5) }'
# Korthikanti's 175B on 64 A100s: refined interleaved splits give the loss
# chunk more layers than the others ([3*30 2 4]); the memory model keeps
# that chunk's activations once (lone_chunk), not in every slot of the last
# stage, and the bound must too (it was 65 MiB above that plan)
WEFT_PLAN_DEBUG=1 "$WEFT" plan plans/paper/korthikanti_175b.lua --backend cuda --top 1 >/dev/null 2>"$WORK/k175.err" || true
read -r n_k k_over _ < <(bounds_over "$WORK/k175.err")
n_k_il=$(grep -c '^debug: bound .* interleaved/[0-9] .*\[.* [0-9]*\]$' "$WORK/k175.err" || true)
check "175B: the memory lower bound is never above the planned bytes ($k_over of $n_k builds over, $n_k_il interleaved with a split)" \
  bash -c "[ '$n_k' -gt 40 ] && [ '$n_k_il' -gt 0 ] && [ '$k_over' = 0 ]"
n_zb=$(grep -c '^debug: bound .* zb-h1 ' "$WORK/z3.err" || true)
n_zb2=$(grep -c '^debug: bound .* zb-h1 zero 2 ' "$WORK/z3.err" || true)
check "1008B: zb-h1 builds are among them ($n_zb), ZeRO-2 ones too ($n_zb2)" \
  bash -c "[ '$n_zb' -gt 0 ] && [ '$n_zb2' -gt 0 ]"
# bf16 builds whose parameters and gradients the memory plan stores in 16
# bits (param16, grad16), interleaved among them: the 1.7B GPT on 32 A100s
# (the bound took a layer's floats: up to 8% above interleaved plans at ZeRO 0)
WEFT_PLAN_DEBUG=1 "$WEFT" plan plans/paper/narayanan_1_7b.lua --backend cuda --top 1 --max-priced 20 \
  >/dev/null 2>"$WORK/n17.err" || true
bound_never_over "16-bit storage, interleaved" "$WORK/n17.err" '^debug: bound .* interleaved/' 5
# PipeDream-2BW (no gradient clipping) under ZeRO-1, which the checker
# accepts (not 2 or 3): the search builds and prices it, mb 16 fitting only
# with the optimizer sharded, and its bound is not above the plans
WEFT_PLAN_DEBUG=1 "$WEFT" plan plans/paper/narayanan_1_7b.lua --backend cuda --set clip_grad_norm=0 --top 3 \
  --max-priced 20 >"$WORK/z1bw.txt" 2>"$WORK/z1bw.err" || true
check "2BW: a ZeRO-1 PipeDream-2BW layout among the best 3" grep -q "^[123]  *dp .* pipedream-2bw zero 1 " "$WORK/z1bw.txt"
bound_never_over "2BW, ZeRO-1" "$WORK/z1bw.err" '^debug: bound .* pipedream-2bw zero 1 ' 0
# and under ZeRO-3, each weight version a parameter shard: on the 39.1B GPT
# on 512 A100s a ZeRO-3 2BW layout is among the best 3, and its bound (the
# second version counted as a second shard) is not above the plans
WEFT_PLAN_DEBUG=1 "$WEFT" plan plans/paper/narayanan_39_1b.lua --backend cuda --set clip_grad_norm=0 --top 3 \
  --max-priced 20 >"$WORK/z3bw.txt" 2>"$WORK/z3bw.err" || true
check "2BW: a ZeRO-3 PipeDream-2BW layout among the best 3 of the 39.1B" \
  grep -q "^[123]  *dp .* pipedream-2bw zero 3 " "$WORK/z3bw.txt"
bound_never_over "2BW, ZeRO-3" "$WORK/z3bw.err" '^debug: bound .* pipedream-2bw zero 3 ' 0
# zb-h1 at ZeRO-3 (gathers for B, none for W): with clipping (no 2BW), the
# 39.1B's first builds include two-stage zb-h1 ZeRO-3 layouts, their bound
# not above the plans
WEFT_PLAN_DEBUG=1 "$WEFT" plan plans/paper/narayanan_39_1b.lua --backend cuda --top 1 --max-priced 5 \
  >/dev/null 2>"$WORK/z3zb.err" || true
bound_never_over "zb-h1, ZeRO-3" "$WORK/z3zb.err" '^debug: bound .* zb-h1 zero 3 ' 0
# the memory bound follows the stages of the split the partition pass will
# give (predicted from its costs on a one-block model): the same as the
# build's for every pipelined build
split_predicted "$WORK/mid.err" 0 ""
check "it prints how many candidates were enumerated, pruned and priced" \
  grep -q "^candidates enumerated [0-9]*; pruned: .*memory lower bound [0-9]*" "$WORK/mid.txt"
check "the table has the step time, tokens/s, MFU, memory, bubble, exposed, comm/compute" \
  grep -q "step s  *tokens/s  *MFU  *mem GiB  *bubble  *exposed comm/c" "$WORK/mid.txt"
check "rejected layouts say why (does not fit: [at least] X of 80 GiB)" \
  grep -q "does not fit: \(at least \)\?[0-9.]* of 80 GiB" "$WORK/mid.txt"
check "tp 16 is refused: it spans two nodes" grep -q "tp 16 spans 2 nodes of 8 devices" "$WORK/mid.txt"
check "weft check accepts the written plan unchanged" "$WEFT" check "$WORK/mid.lua"
"$WEFT" check "$WORK/mid.lua" >"$WORK/mid_check.txt"
# the table's first row and the written plan have the same mesh
read -r dp tp pp < <(sed -n 's/^1  *dp \([0-9]*\) tp \([0-9]*\)[^ ]* pp \([0-9]*\) .*/\1 \2 \3/p' "$WORK/mid.txt")
check "the written plan is the best row's mesh (dp $dp tp $tp pp $pp)" \
  grep -q "^mesh  *dp $dp x tp $tp x pp $pp = 32 ranks" "$WORK/mid_check.txt"
"$WEFT" simulate "$WORK/mid.lua" >"$WORK/mid_sim.txt"
check "every stage of the written plan fits 80 GiB" grep -q "fits: " "$WORK/mid_sim.txt"
check "no stage of the written plan is over" bash -c "! grep -q 'does not fit' '$WORK/mid_sim.txt'"
# the predicted step time in the table is simulate's for the written plan
t_table=$(awk '$1 == 1 && $2 == "dp" { for (i = 1; i <= NF; i++) if ($i ~ /%$/) { print $(i - 2); exit } }' "$WORK/mid.txt")
t_sim=$(sed -n 's/^iteration \([0-9.]*\) s.*/\1/p' "$WORK/mid_sim.txt")
check "the table's step time $t_table s is simulate's $t_sim s for the written plan" test "$t_table" = "$t_sim"

# The same on a device 2 GiB smaller than the winner above needs: that winner
# must now be refused (by the memory lower bound or, once built, by the memory
# model; a higher ZeRO stage of it may win instead); what is written fits.
mem80=$(awk '$1 == 1 && $2 == "dp" { for (i = 1; i <= NF; i++) if ($i ~ /%$/) { print $(i + 1); exit } }' "$WORK/mid.txt")
small=$(awk -v m="$mem80" 'BEGIN { printf "%d", m - 2 }')
"$WEFT" plan "${mid[@]}" --set cluster.device.memory_gib="$small" -o "$WORK/small.lua" >"$WORK/small.txt" 2>/dev/null
"$WEFT" simulate "$WORK/small.lua" >"$WORK/small_sim.txt"
mem_small=$(awk '$1 == 1 && $2 == "dp" { for (i = 1; i <= NF; i++) if ($i ~ /%$/) { print $(i + 1); exit } }' "$WORK/small.txt")
check "$small GiB: the best row needs $mem_small GiB, at most $small" \
  awk -v m="$mem_small" -v d="$small" 'BEGIN { exit !(m != "" && m <= d) }'
check "$small GiB: not the 80 GiB winner's $mem80 GiB" bash -c "! grep -q '^1 .* $mem80 ' '$WORK/small.txt'"
check "$small GiB: the written plan fits" \
  bash -c "grep -q 'fits: ' '$WORK/small_sim.txt' && ! grep -q 'does not fit' '$WORK/small_sim.txt'"

# 2. Deterministic: the same request twice gives the same bytes.
"$WEFT" plan "${mid[@]}" -o "$WORK/mid2.lua" >"$WORK/mid2.txt" 2>/dev/null
check "two runs print the same table" cmp "$WORK/mid.txt" "$WORK/mid2.txt"
check "two runs write the same plan" cmp "$WORK/mid.lua" "$WORK/mid2.lua"

# 2b. The step-time lower bound (simulate's own per-op prices of one block,
# times the blocks a stage must run: see bounds()) is never above the step
# simulate prices, for every priced build of the mid case (WEFT_PLAN_DEBUG).
# (the priced step is the global batch's tokens over tokens/s, printed to
# the unit: it may be low by a relative 0.5 / tokens/s)
over='/^debug: time bound/ { n++; if ($4 + 0 > $6 * (1 + 0.5 / $8)) { v++; print "over:", $0 > "/dev/stderr" } }
  END { print n + 0, v + 0 }'
read -r n_timed t_over < <(awk "$over" "$WORK/mid.err")
check "the step-time lower bound is never above the priced step ($t_over of $n_timed over)" \
  bash -c "[ '$n_timed' -gt 5 ] && [ '$t_over' = 0 ]"

# 2c. The build order and the step-time bound decide only what --max-priced
# leaves out: with the cap out of reach, building every candidate worst
# estimate first with no step-time pruning (WEFT_PLAN_ORDER=reverse) ends at
# the same best layout and writes the same plan as the bounded search in the
# estimate's order; and the bound is never above the step of any of them
# (gpt2_3d: 8 CPU ranks, a few hundred builds).
ord=(plans/gpt2_3d.lua --top 1 --max-priced 5000)
"$WEFT" plan "${ord[@]}" -o "$WORK/ord1.lua" >"$WORK/ord1.txt" 2>/dev/null
WEFT_PLAN_DEBUG=1 WEFT_PLAN_ORDER=reverse "$WEFT" plan "${ord[@]}" -o "$WORK/ord2.lua" >"$WORK/ord2.txt" 2>"$WORK/ord2.err"
b1=$(sed -n 's/^built \([0-9]*\) through.*/\1/p' "$WORK/ord1.txt")
b2=$(sed -n 's/^built \([0-9]*\) through.*/\1/p' "$WORK/ord2.txt")
check "order: the cap is not hit in either order (built $b1 and $b2)" \
  bash -c "grep -q 'over --max-priced 0$' '$WORK/ord1.txt' && grep -q 'over --max-priced 0$' '$WORK/ord2.txt'"
check "order: the exhaustive run builds more ($b2 > $b1: the bound prunes)" \
  bash -c "[ -n '$b1' ] && [ -n '$b2' ] && [ '$b2' -gt '$b1' ] && grep -q 'step-time lower bound 0;' '$WORK/ord2.txt'"
check "order: the same best row in both" \
  bash -c "[ \"\$(grep '^1 ' '$WORK/ord1.txt')\" = \"\$(grep '^1 ' '$WORK/ord2.txt')\" ] && grep -q '^1 ' '$WORK/ord1.txt'"
check "order: the same written plan in both" cmp "$WORK/ord1.lua" "$WORK/ord2.lua"
read -r n_all all_over < <(awk "$over" "$WORK/ord2.err")
check "order: the step-time bound is never above the step of any candidate ($all_over of $n_all over)" \
  bash -c "[ '$n_all' -gt 100 ] && [ '$all_over' = 0 ]"
# the memory lower bound against the memory model on every one of them too
# (pipelined and interleaved layouts among them)
read -r n_mall m_over _ < <(bounds_over "$WORK/ord2.err")
check "order: the memory lower bound is never above the planned bytes of any candidate ($m_over of $n_mall over)" \
  bash -c "[ '$n_mall' -gt 100 ] && [ '$m_over' = 0 ] && grep -q 'debug: bound .* interleaved' '$WORK/ord2.err'"
split_predicted "$WORK/ord2.err" 50 "order: "

# 3. CPU plans: the written best compiles through weft check with no change.
"$WEFT" plan plans/gpt2_3d.lua --top 3 -o "$WORK/3d.lua" >"$WORK/3d.txt" 2>/dev/null
check "gpt2_3d: the best plan passes weft check" "$WEFT" check "$WORK/3d.lua"

# --scaling: the best layout's MFU at 1x, 2x and 4x the ranks, same batch.
"$WEFT" plan plans/tiny.lua --top 1 --scaling >"$WORK/scale.txt" 2>/dev/null
check "--scaling reports 2, 4 and 8 ranks" \
  bash -c "grep -q '^   1x      2 GPUs: MFU' '$WORK/scale.txt' && grep -q '^   2x      4 GPUs: MFU' '$WORK/scale.txt' && grep -q '^   4x      8 GPUs: MFU' '$WORK/scale.txt'"
# --scaling where the plan's node does not divide the larger counts: 3 of
# gpt2_3d's 8-device node are one node of 3; 6 one node of 6; 12 four nodes
# of 3.  The 12 were refused as "not a whole number of 8-device nodes" on
# stderr under exit 0, and the table said "no layout fits" there.
rc=0
"$WEFT" plan plans/gpt2_3d.lua --gpus 3 --global-batch 12 --top 1 --scaling >"$WORK/scale3.txt" 2>"$WORK/scale3.err" || rc=$?
check "--scaling from 3 of an 8-device node: exit 0, no error on stderr ($rc)" \
  bash -c "[ '$rc' = 0 ] && ! grep -q 'error' '$WORK/scale3.err'"
check "--scaling from 3: 6 and 12 GPUs priced, not 'no layout fits'" \
  bash -c "grep -q '^   2x      6 GPUs: MFU' '$WORK/scale3.txt' && grep -q '^   4x     12 GPUs: MFU' '$WORK/scale3.txt'"

# A plan with a user kernel (tiny_swish: kernels/swish.c, read from the
# plan's folder): -o in another folder wrote a plan `weft check` refused
# ("cannot read .../kernels/swish.c"; bench/plan_fuzz.sh seed 4).  Refused
# before the search, naming the folder; next to the plan it is written and
# accepted.
rc=0
"$WEFT" plan plans/tiny_swish.lua --top 1 -o "$WORK/swish.lua" >/dev/null 2>"$WORK/swish.err" || rc=$?
cat "$WORK/swish.err"
check "user kernel, -o elsewhere: exit 1 naming the plan's folder, nothing written ($rc)" \
  bash -c "[ '$rc' = 1 ] && grep -q '^weft: error: .*kernels/swish.c.*write the plan into plans (-o plans/NAME.lua)' '$WORK/swish.err' &&
    [ ! -e '$WORK/swish.lua' ]"
mkdir -p "$WORK/swish/kernels"
cp plans/tiny_swish.lua "$WORK/swish/"; cp plans/kernels/swish.c "$WORK/swish/kernels/"
"$WEFT" plan "$WORK/swish/tiny_swish.lua" --top 1 -o "$WORK/swish/best.lua" >/dev/null 2>&1
check "user kernel, -o beside the plan: weft check accepts the written plan" "$WEFT" check "$WORK/swish/best.lua"

# 3b. Stage partitions: the partition pass balances FLOPs, which is not the
# fastest split for simulate (the first stage also holds the embedding, the
# last the LM head and loss).  tiny with 7 layers on 3 ranks, global batch 4
# (dp 3 does not divide it, tp 3 not the 4 heads): every layout is pp 3.  The
# search moves a layer across the first and last boundaries of its best and
# keeps a faster split; the written plan pins it (pipeline.stages).
part=(plans/tiny.lua --set model.layers=7 --set cluster.devices_per_node=3 --global-batch 4 --top 3)
"$WEFT" plan "${part[@]}" --print-sets -o "$WORK/part.lua" >"$WORK/part.txt" 2>/dev/null
cat "$WORK/part.txt" | grep -v '^sets'
check "partitions: the refinement's builds are counted" \
  grep -q "^stage partitions: .* ([1-9][0-9]* of the builds)" "$WORK/part.txt"
check "partitions: the table shows each row's layers per stage" \
  grep -q "^1  *dp 1 tp 1 pp 3 .* \[[0-9* ]*\]  " "$WORK/part.txt"
# row 1 against the same layout with the partition pass's own split
sets1=$(awk -F'\t' '$1 == "sets" && $2 == 1 { print $4 }' "$WORK/part.txt")
# shellcheck disable=SC2086
own=$(echo $sets1 | sed 's/--set pipeline\.stages\.[0-9]*=[0-9]*//g')
# shellcheck disable=SC2086
t_own=$("$WEFT" simulate plans/tiny.lua $own | sed -n 's/^throughput \([0-9]*\) tokens.*/\1/p')
# shellcheck disable=SC2086
t_best=$("$WEFT" simulate plans/tiny.lua $sets1 | sed -n 's/^throughput \([0-9]*\) tokens.*/\1/p')
check "partitions: row 1 ($t_best tokens/s) is faster than its layout with the partition pass's split ($t_own)" \
  awk -v a="$t_best" -v b="$t_own" 'BEGIN { exit !(a != "" && b != "" && a > b) }'
check "partitions: the written plan sets the split and passes weft check" \
  bash -c "grep -q 'pipeline.stages.1' '$WORK/part.lua' && '$WEFT' check '$WORK/part.lua' >/dev/null"
t_written=$("$WEFT" simulate "$WORK/part.lua" | sed -n 's/^throughput \([0-9]*\) tokens.*/\1/p')
check "partitions: the written plan is row 1 ($t_written tokens/s)" test "$t_written" = "$t_best"

# 3c. A VLM (plans/vlm_tiny.lua) on 4 CPU ranks of one node: sequence
# parallelism is searched as for any model (weft.vlm runs tp + sp on both
# backends), and the memory bound on its first stage is measured with it;
# its encoder runs on the first stage and is priced there (the top 12 hold a
# pipelined row).
WEFT_PLAN_DEBUG=1 "$WEFT" plan plans/vlm_tiny.lua --set cluster.devices_per_node=4 --top 12 --print-sets \
  -o "$WORK/vlm.lua" >"$WORK/vlm.txt" 2>"$WORK/vlm.err"
grep -v '^sets' "$WORK/vlm.txt"
check "vlm: weft plan writes a plan weft check accepts" "$WEFT" check "$WORK/vlm.lua"
n_sp=$(grep -c '^debug: time bound .* tp 2+sp ' "$WORK/vlm.err" || true)
check "vlm: sequence-parallel layouts are built and priced ($n_sp)" \
  bash -c "[ '$n_sp' -gt 0 ] && ! grep -q 'sequence parallelism not supported' '$WORK/vlm.txt'"
read -r n_built n_over _ < <(bounds_over "$WORK/vlm.err")
check "vlm: the memory lower bound is never above the planned bytes ($n_over of $n_built builds over)" \
  bash -c "[ '$n_built' -gt 5 ] && [ '$n_over' = 0 ]"
# a pipelined row: its price is simulate's, whose first chunk holds the encoder
row=$(awk -F'\t' '$1 == "sets" && $4 ~ /mesh.pp=2/ { print $2; exit }' "$WORK/vlm.txt")
setsp=$(awk -F'\t' -v r="$row" '$1 == "sets" && $2 == r { print $4 }' "$WORK/vlm.txt")
# shellcheck disable=SC2086
"$WEFT" simulate plans/vlm_tiny.lua $setsp >"$WORK/vlm_sim.txt"
t_row=$(awk -v r="$row" '$1 == r && $2 == "dp" { for (i = 1; i <= NF; i++) if ($i ~ /%$/) { print $(i - 2); exit } }' "$WORK/vlm.txt")
t_sim=$(sed -n 's/^iteration \([0-9.]*\) s.*/\1/p' "$WORK/vlm_sim.txt")
check "vlm: row $row (pp 2) is priced as simulate prices it ($t_row s, simulate $t_sim s)" \
  bash -c "[ -n '$row' ] && [ '$t_row' = '$t_sim' ]"
check "vlm: simulate puts the encoder in the first chunk's compute" \
  grep -q "^encoder   vision encoder and projector [0-9.]* ms of the first chunk's" "$WORK/vlm_sim.txt"

# 3d. Interleaved layouts' partitions are refined too (pp * virtual chunks,
# a layer moved across the first and last chunk boundaries).  A 32-layer,
# 12288-wide GPT on 64 H100s, global batch 128, its nodes joined by a 3 GB/s
# link (RoCE's copy in a plan, its bandwidth set lower): data parallelism
# across nodes is dear (ZeRO-3's gathers too, which on 100 Gb/s hide under
# the compute of a dp-32 single-stage layout and win) and few microbatches
# make the bubble count, so the best is interleaved.
sed 's/device = w.gpu.H100_SXM }/device = w.gpu.H100_SXM, inter_link = w.link.ROCE100 }/' plans/gpt_1t.lua \
  >"$WORK/roce.lua"
il=("$WORK/roce.lua" --set cluster.inter_link.gbs=3 --set cluster.inter_link.bus_gbs=3 --set model.layers=32
    --set model.hidden=12288 --set model.heads=96 --set batch.global=128 --gpus 64 --top 2)
"$WEFT" plan "${il[@]}" -o "$WORK/il.lua" >"$WORK/il.txt" 2>/dev/null
grep -E '^(1|stage) ' "$WORK/il.txt"
check "interleaved: the best row is interleaved, with pp x virtual chunks in brackets" \
  grep -q "^1  *dp .* interleaved/[24] .* \[[0-9* ]*\]  " "$WORK/il.txt"
check "interleaved: its partition was priced again (the refinement's builds are counted)" \
  grep -q "^stage partitions: .* ([1-9][0-9]* of the builds)" "$WORK/il.txt"
"$WEFT" simulate "$WORK/il.lua" >"$WORK/il_sim.txt"
t_table=$(awk '$1 == 1 && $2 == "dp" { for (i = 1; i <= NF; i++) if ($i ~ /%$/) { print $(i - 2); exit } }' "$WORK/il.txt")
t_sim=$(sed -n 's/^iteration \([0-9.]*\) s.*/\1/p' "$WORK/il_sim.txt")
check "interleaved: the written plan passes weft check and simulates at the table's $t_table s ($t_sim s)" \
  bash -c "'$WEFT' check '$WORK/il.lua' >/dev/null && [ -n '$t_table' ] && [ '$t_table' = '$t_sim' ]"

# 3g. The build order prices ZeRO-3 as simulate does (its gathers and
# reduce-scatter hide under a microbatch's compute): on RoCE 100 itself the
# dp-32 ZeRO-3 single-stage layout (30.9 s) is built among the first, and
# the step-time bound then ends the search far below --max-priced, at the
# best --max-priced 400 finds.  (An estimate that charged ZeRO-3 its whole
# traffic built it after the cap of 96 and chose an interleaved layout at
# 35.1 s; with 400 builds it found the 30.9 s.)
z3o=("$WORK/roce.lua" --set model.layers=32 --set model.hidden=12288 --set model.heads=96
     --set batch.global=128 --gpus 64 --top 1)
"$WEFT" plan "${z3o[@]}" >"$WORK/z3o.txt" 2>/dev/null
"$WEFT" plan "${z3o[@]}" --max-priced 400 >"$WORK/z3o400.txt" 2>/dev/null
grep -E '^(1|built) ' "$WORK/z3o.txt"
check "zero3 order: the best row is --max-priced 400's, a ZeRO-3 single-stage layout" \
  bash -c "grep -q '^1  *dp [0-9]* tp [0-9+sp]* pp 1 .* zero 3 ' '$WORK/z3o.txt' &&
    [ \"\$(grep '^1 ' '$WORK/z3o.txt')\" = \"\$(grep '^1 ' '$WORK/z3o400.txt')\" ]"
check "zero3 order: the step-time bound ends the search before the cap (over --max-priced 0)" \
  grep -q "over --max-priced 0$" "$WORK/z3o.txt"

# 3f. The refinement of partitions can change the winner: the pipelined
# layouts after the best whose step-time bound (which holds for any split)
# is below the best step are refined too.  In 3b (tiny, 7 layers on 3
# ranks) the 1F1B layout with the partition pass's split is behind the
# zero-bubble one (row 2); a layer moved makes it the best.
check "refined winner: the search says the best changed" \
  grep -q "^stage partitions: .*; the best is now a layout that was not the best before$" "$WORK/part.txt"
sets1=$(awk -F'\t' '$1 == "sets" && $2 == 1 { print $4 }' "$WORK/part.txt")
sets2=$(awk -F'\t' '$1 == "sets" && $2 == 2 { print $4 }' "$WORK/part.txt")
# shellcheck disable=SC2086
own=$(echo $sets1 | sed 's/--set pipeline\.stages\.[0-9]*=[0-9]*//g')
tps() { "$WEFT" simulate plans/tiny.lua "$@" | sed -n 's/^throughput \([0-9]*\) tokens.*/\1/p'; }
# shellcheck disable=SC2086
t1=$(tps $sets1) t_own=$(tps $own) t2=$(tps $sets2)
check "refined winner: row 1 is pipelined with its own split ($sets1)" \
  bash -c "echo '$sets1' | grep -q 'mesh.pp=3' && echo '$sets1' | grep -q 'pipeline.stages.1='"
check "refined winner: with the partition pass's split it was behind row 2 ($t_own < $t2 tokens/s), refined ahead ($t1)" \
  awk -v a="$t1" -v o="$t_own" -v b="$t2" 'BEGIN { exit !(a != "" && o != "" && b != "" && o < b && a > b) }'

# 3e. A VLM's memory lower bound: the first stage alone holds the vision
# encoder and projector, and every rank the step's images.  vlm_tiny with 8
# ViT and 8 language-model layers on 4 ranks of 0.012 GiB: the bound (printed
# with the planned bytes of every build under WEFT_PLAN_DEBUG) is never above
# what the memory model plans for the built candidate, ZeRO steps and
# refinements included, and it prunes layouts before they are built.
vb=(plans/vlm_tiny.lua --set model.vision.layers=8 --set model.llm.layers=8 --set cluster.devices_per_node=4
    --set cluster.device.memory_gib=0.012 --top 3)
WEFT_PLAN_DEBUG=1 "$WEFT" plan "${vb[@]}" -o "$WORK/vb.lua" >"$WORK/vb.txt" 2>"$WORK/vb.err"
read -r n_built n_over tightest < <(bounds_over "$WORK/vb.err")
built=$(sed -n 's/^built \([0-9]*\) through.*/\1/p' "$WORK/vb.txt")
check "vlm bound: printed for every one of the $built builds ($n_built)" \
  bash -c "[ -n '$built' ] && [ '$built' -gt 20 ] && [ '$built' = '$n_built' ]"
check "vlm bound: never above the planned bytes ($n_over of $n_built over; tightest bound/planned $tightest)" \
  test "$n_over" = 0
n_spb=$(grep -c '^debug: bound .* tp 2+sp ' "$WORK/vb.err" || true)
check "vlm bound: sequence-parallel builds are among them ($n_spb)" test "$n_spb" -gt 0
check "vlm bound: tight where the encoder's stage decides (some bound >= 0.9 of the plan)" \
  awk -v t="$tightest" 'BEGIN { exit !(t >= 0.9) }'
# bf16, whose parameters and gradients param16 / grad16 may store in 2
# bytes, and a 512-token vocabulary: the first stage's 1- and 2-layer
# builds keep floats (their last stage, 1 layer and the 512 x 32 head,
# saves nothing in 16 bits) where the searched layouts store 16 bits, so
# the bound measures floats and takes the 16-bit storage itself (measured
# with "auto": 29 of 103 builds over, by up to 6%)
WEFT_PLAN_DEBUG=1 "$WEFT" plan "${vb[@]}" --set precision=bf16 --set model.llm.vocab=512 >"$WORK/vb16.txt" 2>"$WORK/vb16.err"
read -r n_b16 b16_over tight16 < <(bounds_over "$WORK/vb16.err")
check "vlm bound, bf16: never above the planned bytes ($b16_over of $n_b16 over; tightest $tight16)" \
  bash -c "[ '$n_b16' -gt 20 ] && [ '$b16_over' = 0 ] && awk -v t='$tight16' 'BEGIN { exit !(t >= 0.9) }'"
check "vlm bound: it prunes layouts before they are built" \
  grep -q "memory lower bound [1-9][0-9]*;" "$WORK/vb.txt"
p_set=$("$WEFT" check plans/vlm_tiny.lua --set model.vision.layers=8 --set model.llm.layers=8 | sed -n 's/^params .*(\([0-9]*\))$/\1/p')
p_written=$("$WEFT" check "$WORK/vb.lua" | sed -n 's/^params .*(\([0-9]*\))$/\1/p')
check "vlm: the written plan keeps the searched model's encoder and language model ($p_written of $p_set parameters)" \
  bash -c "[ -n '$p_set' ] && [ '$p_set' = '$p_written' ]"
check "vlm bound: the written plan fits" \
  bash -c "'$WEFT' simulate '$WORK/vb.lua' | grep -q 'fits: ' && ! '$WEFT' simulate '$WORK/vb.lua' | grep -q 'does not fit'"

# 4. Impossible requests: exit 1 with the nearest feasible change.  1T
# parameters hold 16 bytes each in fp32 (weights, gradients, AdamW's two
# moments): 15021 GiB, over 72 GiB (80 with 10% spare) = 209 GPUs, so the
# next doubling of 8 is 256.
rc=0
"$WEFT" plan plans/gpt_1t.lua --gpus 8 >"$WORK/1t8.txt" 2>"$WORK/1t8.err" || rc=$?
cat "$WORK/1t8.err"
check "1T on 8 GPUs: exit 1 (got $rc)" test "$rc" = 1
check "1T on 8 GPUs: says no layout fits (ZeRO-3 tried) and how many GPUs it needs" \
  grep -q "no layout fits on 8 H100_SXM (80 GiB each), ZeRO-3, .*needs at least 256 GPUs$" "$WORK/1t8.err"
rc=0
"$WEFT" plan plans/tiny.lua --set model.heads=1 --set model.layers=1 --global-batch 7 \
  >"$WORK/b7.txt" 2>"$WORK/b7.err" || rc=$?
cat "$WORK/b7.err"
check "batch 7 on 2 ranks that must be data parallel: exit 1 (got $rc)" test "$rc" = 1
check "batch 7: names the nearest global batch a mesh divides" \
  grep -q "no mesh on 2 GPUs has a data-parallel size dividing the global batch 7; nearest feasible: --global-batch [68]$" "$WORK/b7.err"
# the nearest batch follows the enumeration's rules, grouped-query heads
# included (bench/plan_fuzz.sh seed 5): llama_tiny with 2 layers and one
# key/value head on 24 ranks of 2-device nodes runs tp 1 only, so dp is 24
# or 12 (pp 2); batch 5 was sent to 6 (tp 2 x pp 2, dp 6), refused in turn
rc=0
gqa=(plans/llama_tiny.lua --set model.layers=2 --set model.kv_heads=1 --gpus 24 --top 1)
"$WEFT" plan "${gqa[@]}" --global-batch 5 >/dev/null 2>"$WORK/gqa.err" || rc=$?
cat "$WORK/gqa.err"
nb=$(sed -n 's/.*nearest feasible: --global-batch \([0-9]*\)$/\1/p' "$WORK/gqa.err")
check "one key/value head, batch 5 on 24 ranks: exit 1 naming a batch ($rc, ${nb:-none})" \
  bash -c "[ '$rc' = 1 ] && [ -n '$nb' ]"
check "one key/value head: a layout runs the batch named, $nb" "$WEFT" plan "${gqa[@]}" --global-batch "${nb:-0}"

# tp must divide llama's ffn_hidden (and a VLM encoder's heads and mlp) as
# it divides the heads: the search's arithmetic rule and the nearest batch
# know it (bench/plan_fuzz.sh seed 7).  llama_tiny with ffn_hidden 85 on 6
# ranks of 2-device nodes, global batch 1 (dp 1: tp 2 x pp 3 only) said "no
# layout fits on 6 CPU (16 GiB each), ZeRO-3, ..." of 0.001 GiB of state;
# on 16 ranks of one node it named batch 2 (tp 2 x pp 4), refused in turn.
rc=0
ffn=(plans/llama_tiny.lua --set model.layers=5 --set model.heads=2 --set model.kv_heads=2 --set model.hidden=32
     --set model.ffn_hidden=85 --top 1)
for g in 6 16; do
  rc=0
  "$WEFT" plan "${ffn[@]}" --set cluster.devices_per_node=$((g == 16 ? 16 : 2)) --gpus $g --global-batch 1 \
    >/dev/null 2>"$WORK/ffn.err" || rc=$?
  cat "$WORK/ffn.err"
  nb=$(sed -n 's/.*; nearest feasible: --global-batch \([0-9]*\)$/\1/p' "$WORK/ffn.err")
  check "ffn_hidden 85, $g ranks, batch 1: exit 1 naming a batch, not memory ($rc, ${nb:-none})" \
    bash -c "[ '$rc' = 1 ] && [ -n '$nb' ] && ! grep -q 'no layout fits' '$WORK/ffn.err'"
  check "ffn_hidden 85, $g ranks: a layout runs the batch named, ${nb:-none}" \
    "$WEFT" plan "${ffn[@]}" --set cluster.devices_per_node=$((g == 16 ? 16 : 2)) --gpus $g --global-batch "${nb:-0}"
done
# every layout refused by the passes, none for memory: GPT-2 small with one
# layer on 8 H200s of 4-device nodes under mesh.order dp-tp-pp, batch 2
# (dp 2, tp 4: each tp group spread over 8 ranks).  It said "no layout
# fits"; now the first refusal, which names the valid orders.
rc=0
"$WEFT" plan plans/gpt2_124m.lua --backend cuda --set model.layers=1 --set mesh.order=dp-tp-pp \
  --set cluster.devices_per_node=4 --gpus 8 --global-batch 2 --top 1 >/dev/null 2>"$WORK/order.err" || rc=$?
cat "$WORK/order.err"
check "every layout refused: exit 1, the refusal and its valid orders named, not memory ($rc)" \
  bash -c "[ '$rc' = 1 ] && grep -q 'every layout on 8 H200 is refused by the passes, none for memory; .*mesh.order: .*valid: an order with tp innermost' '$WORK/order.err' &&
    ! grep -q 'no layout fits' '$WORK/order.err'"

# 4b. A device too small for one microbatch of one layer (bench/plan_fuzz.sh
# seed 1's kind): tiny with 1 layer, 1 head (no tp, no pp), seq 1024 and a
# 50257-token vocabulary on 0.05 GiB CPUs.  The state bound alone said
# "needs at least 4 GPUs", and 4 GPUs then said 8: more GPUs never fit
# (0.056 GiB a rank on 32).  The GPU count is searched before it is named;
# the message names the device size instead, in digits that show it (the
# capacity read "0 GiB each").
one=(plans/tiny.lua --set model.layers=1 --set model.heads=1 --set model.seq=1024 --set model.vocab=50257
     --set cluster.device.memory_gib=0.05 --set cluster.devices_per_node=8 --top 1)
rc=0
"$WEFT" plan "${one[@]}" --gpus 1 >/dev/null 2>"$WORK/one.err" || rc=$?
cat "$WORK/one.err"
check "activations over the device: exit 1 (got $rc)" test "$rc" = 1
check "activations over the device: no GPU count is named, the device size is (0.05 GiB each; at least 0.05x GiB)" \
  bash -c "grep -q 'no layout fits on 1 CPU (0.05 GiB each), .*needs devices of at least 0\.05[0-9]* GiB' '$WORK/one.err' &&
    ! grep -q 'needs at least [0-9]* GPUs' '$WORK/one.err'"
# where the state decides, the GPU count named is one where a layout fits:
# tiny on 8 CPUs of 0.002 GiB (its state 0.0126 GiB: at least 8, doubled 16)
rc=0
"$WEFT" plan plans/tiny.lua --set cluster.device.memory_gib=0.002 --set cluster.devices_per_node=8 --gpus 8 --top 1 \
  >/dev/null 2>"$WORK/small8.err" || rc=$?
cat "$WORK/small8.err"
n_named=$(sed -n 's/.*(0.002 GiB each).*: needs at least \([0-9]*\) GPUs$/\1/p' "$WORK/small8.err")
check "0.002 GiB devices: exit 1 naming a GPU count ($rc, ${n_named:-none})" bash -c "[ '$rc' = 1 ] && [ -n '$n_named' ]"
check "0.002 GiB devices: a layout fits on the $n_named GPUs named" \
  "$WEFT" plan plans/tiny.lua --set cluster.device.memory_gib=0.002 --set cluster.devices_per_node=8 --gpus "${n_named:-0}" --top 1
echo "$passed passed, $failed failed"
[ $failed = 0 ]
