#!/usr/bin/env bash
# The Megatron-LM paper configurations (plans/paper/: Narayanan et al. SC21
# Table 1, Korthikanti et al. 2022 Table 5) as Weft plans, compiler only: each
# passes `weft check --backend cuda` in both recompute modes (as written: full
# recompute; and --set recompute=selective --set mesh.sp=true), so no head
# size (160 in the 529.6B and 1T models) is refused; check reports the
# parameter count the paper gives (the file name's, within 1%: Megatron's
# GPT is GPT-2's block with tied embeddings and learned positions, P =
# 12Lh^2 (1 + 13/(12h) + (V + s)/(12Lh)), so only the paper's rounding
# differs), and the layout the plan names.  bench/paper_memory.sh's table
# (the planned activation memory against the paper's formulas) must be
# complete, and each row fit an 80 GB A100 within 10% of the formula (below).
source "$(dirname "$0")/lib.sh"

n=0
for plan in plans/paper/*.lua; do
  name=$(basename "$plan" .lua)
  # the paper's size from the name: narayanan_145_6b -> 145.6e9 (+-0.05e9),
  # korthikanti_1t -> 1e12 (+-0.5e12)
  size=${name#*_}
  for mode in full selective; do
    extra=()
    [ "$mode" = selective ] && extra=(--set recompute=selective --set mesh.sp=true)
    out=$WORK/$name.$mode.txt
    rc=0
    "$WEFT" check --backend cuda "$plan" "${extra[@]}" >"$out" 2>&1 || rc=$?
    check "$name ($mode): weft check --backend cuda compiles it (exit $rc)" \
      grep -q "verdict" "$out"
    [ "$rc" = 0 ] || head -3 "$out"
    check "$name ($mode): no head-size refusal" bash -c "! grep -q 'head size' '$out'"
    verdict=$(sed -n 's/^ *verdict *//p' "$out")
    echo "     $name ($mode): $verdict"
    n=$((n + 1))
  done
  # "params    174.62 G (174615846912)": the exact count
  params=$(sed -nE 's/^params .*\(([0-9]+)\).*/\1/p' "$WORK/$name.full.txt")
  check "$name: $params parameters, the paper's $size to the digits it gives" \
    awk -v p="$params" -v z="$size" 'BEGIN { u = substr(z, length(z)); z = substr(z, 1, length(z) - 1)
      half = index(z, "_") ? 0.05 : 0.5; gsub(/_/, ".", z); k = u == "t" ? 1e12 : 1e9
      exit !(p > 0 && p >= (z - half) * k && p < (z + half) * k) }'
  # the override took: the two modes plan different activation memory
  # (stage 0's column; which is larger is the memory plan's business: by
  # Korthikanti's formulas selective + sp keeps 34/t sbh a layer against full
  # recompute's 2sbh, more for t < 17, but today's plan puts more in full
  # recompute's slots for the 1T model)
  acts() { awk '$1 == "activations" && $3 ~ /^(B|KiB|MiB|GiB|TiB)$/ { print $2 * ($3 == "GiB" ? 1024 : $3 == "MiB" ? 1 : 1 / 1024) }' "$1"; }
  full=$(acts "$WORK/$name.full.txt") sel=$(acts "$WORK/$name.selective.txt")
  check "$name: stage 0 plans $sel MiB of activations with selective recompute + sp, $full MiB with full" \
    awk -v f="$full" -v s="$sel" 'BEGIN { exit !(s > 0 && f > 0 && s != f) }'
done
check "14 paper plans x 2 modes checked ($n)" test "$n" = 28
# bench/paper_memory.sh reads check's report: with STAGES=1 a row of positive
# numbers for each stage of each plan and mode (a change in check's format
# shows here, not as zeros)
STAGES=1 WEFT="$WEFT" bash bench/paper_memory.sh >"$WORK/stages.txt" 2>&1
rows() { awk 'NR > 2 && NF >= 13 && ($3 == "yes" || $3 == "NO") && $4 >= 0 && $5 > 0 && $6 > 0 && $7 > 0 &&
  $8 > 0 && $9 > 0 && $10 > 0' "$WORK/stages.txt"; }
# the table: each plan and mode's stage with the largest a/f, and stage 0's
head -2 "$WORK/stages.txt"
rows | awk '{ k = $1 " " $2; if (!(k in best) || $9 > worst[k]) { best[k] = $0; worst[k] = $9 } if (!(k in order)) order[k] = n++ }
  END { for (k in order) line[order[k]] = best[k]; for (i = 0; i < n; i++) print line[i] }'
check "paper_memory.sh: 28 plans x modes, a complete row for every stage" \
  test "$(rows | awk '{ print $1, $2 }' | sort -u | wc -l)" = 28
# Every plan fits the 80 GB A100 (known exceptions below), and every stage is
# compared with its own formula (bench/paper_memory.sh: stage s of 1F1B holds
# min(p - s, m) microbatches of L/p layers, the interleaved schedule
# min(pv + p - 1 - 2s, mv) chunk-microbatches of L/(pv) layers):
#   - stage 0, the paper's own comparison: within 10% of the formula or below;
#   - the microbatches in flight: from stage s to stage s + 1 (neither the
#     last) the planned activations drop by what the formula drops, within
#     10% (selective + SP keeps 32/34 of the formula's per layer: about 0.94);
#   - every stage but the last within 10% of its formula or below: Weft's
#     working set (the stage's region: under full recompute one block's
#     tensors live at one tick of its recompute and backward, in-place ops
#     sharing their dying inputs' places, compiler/memory_inplace.c) is no
#     larger than the formula's;
#   - the last stage within 10% or below once the LM head is taken off (the
#     head column: its 2sbh input, the 16-bit dlogits 2sbv/t), which the
#     formula leaves out and which is a large part of a deep pipeline's last
#     stage (2 of the 1T's 128 layers: 0.42 GiB of formula against 0.12 GiB
#     of head).
# Known exceptions to fitting, stated by the table's note: the selective +
# SP variants of the 1.7B (tp 1) and 3.6B (tp 2) plans, which the papers did
# not run (Narayanan et al. used full recompute): 34/t sbh a layer is 57 and
# 48 GiB at microbatch 16, so even the formula's activations with the model
# states exceed 80 GB; for those the test checks that the formula does not
# fit and that the plan is still within 10% of it.
explained() { [[ $1 != *unexplained* ]]; }
for key in $(rows | awk '{ print $1 "." $2 }' | sort -u); do
  plan=${key%.*} mode=${key#*.}
  rows | awk -v p="$plan" -v m="$mode" '$1 == p && $2 == m' >"$WORK/one.txt"
  read -r _ _ fits _ total _ _ _ _ _ af0 _ _ note < <(head -1 "$WORK/one.txt")
  check "$plan ($mode): stage 0 within 10% of its formula or below (a/f $af0)" awk -v r="$af0" 'BEGIN { exit !(r <= 1.10) }'
  msg=$(awk '{ A[NR] = $6; F[NR] = $8; H[NR] = $13; r[NR] = $9 }
    END { bad = ""; within = 0; head = 0; lo = 9; hi = 0
      for (i = 1; i <= NR; i++) {
        if (r[i] <= 1.10) within++
        else if (i == NR && (A[i] - H[i]) / F[i] <= 1.10) head++
        else bad = bad sprintf(" stage %d (a/f %.2f, without the head %.2f)", i - 1, r[i], (A[i] - H[i]) / F[i])
        if (i + 1 < NR && F[i] > F[i + 1]) { q = (A[i] - A[i + 1]) / (F[i] - F[i + 1]); if (q < lo) lo = q; if (q > hi) hi = q }
      }
      if (hi && (lo < 0.90 || hi > 1.10)) bad = bad sprintf(" per-stage drops %.3f..%.3f of the formula", lo, hi)
      printf "%d stages: %d within 10%%%s%s%s", NR, within,
             head ? sprintf(", the last within 10%% without the LM head (a/f %.2f, %.2f without)", r[NR], (A[NR] - H[NR]) / F[NR]) : "",
             hi ? sprintf(", per-stage drops %.3f..%.3f of the formula", lo, hi) : "",
             bad == "" ? "" : "; unexplained:" bad }' "$WORK/one.txt")
  check "$plan ($mode): $msg" explained "$msg"
  if [ "$fits" = yes ]; then
    check "$plan ($mode): fits in 80 GB (largest stage total $total GiB)" true
  else
    check "$plan ($mode): does not fit ($total GiB), because the formula's own activations do not (${note:-})" \
      test "${note:-}" = "formula does not fit"
    case "$plan.$mode" in narayanan_1_7b.selective|narayanan_3_6b.selective) ;;
      *) check "$plan ($mode) is one of the two stated exceptions" false ;; esac
  fi
done
# Zero-bubble (zb-h1) on the 39.1B plan: past B only the activation
# gradients W reads stay (compiler/memory_grads.c).  Stage 0 holds 24 layers
# of h 8192 at tp 8 for a microbatch of sb = 4 x 2048 tokens, in bf16
# (hsb x 2 B = 128 MiB).  W reads the output gradient of each op whose
# parameter gradients wait for W (ops.h's op_weight_grad_in_w).  A row-
# parallel c_proj's output, its all-reduce's and its bias add's gradients
# are one value in one place (ops.h's grad_alias): h each of the two, 2h.
# c_attn's 3h/t and c_fc's 4h/t add 0.875h: 2.875 x 128 = 368 MiB a layer;
# then the token lookup's partial sum (its whole backward is W's; its all-
# reduce's output in its place), 128 MiB.  All are live at B's last step:
# at least 24 x 368 + 128 = 8960 MiB, at most that plus what B needs for the
# rest, no more than 1F1B's whole set (its peak at one step).  Under ZeRO-2
# the norms' and biases' parameter gradients B computes wait in the set for
# W (op_weight_grad_staged): 2 norms x 2h + 2 biases x h floats a layer, 6 x
# 32 KiB = 192 KiB, 4.5 MiB in all, inside that margin.  With every
# parameter gradient in W and no shared places it was 21376 MiB (24 x 880 +
# 256); with every gradient of the chunk kept to W, 39.38 GiB.
grads() { "$WEFT" check --backend cuda plans/paper/narayanan_39_1b.lua --set zero="$2" --set pipeline.schedule="$1" |
  awk '$1 == "act." && $2 == "grads" { print $3 * ($4 == "GiB" ? 1024 : $4 == "MiB" ? 1 : $4 == "KiB" ? 1 / 1024 : 0) }'; }
one=$(grads 1f1b 2)
for zl in "2 8960" "0 8960"; do
  read -r zero low <<<"$zl"
  zb=$(grads zb-h1 "$zero")
  check "narayanan_39_1b zb-h1 ZeRO-$zero: stage 0 activation gradients $zb MiB, within [$low, $low + 1F1B's $one] MiB" \
    awk -v z="$zb" -v o="$one" -v l="$low" 'BEGIN { exit !(o > 0 && z >= l && z <= l + o) }'
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
