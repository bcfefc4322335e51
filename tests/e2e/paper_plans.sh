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
# bench/paper_memory.sh reads check's report: a row of positive numbers for
# each plan and mode (a change in check's format shows here, not as zeros)
WEFT="$WEFT" bash bench/paper_memory.sh >"$WORK/table.txt" 2>&1
cat "$WORK/table.txt"
check "paper_memory.sh: 28 complete rows" test "$(awk 'NR > 2 && NF >= 10 && ($3 == "yes" || $3 == "NO") &&
  $4 >= 0 && $5 > 0 && $6 > 0 && $7 > 0 && $8 > 0 && $9 > 0 && $10 > 0' "$WORK/table.txt" | wc -l)" = 28
# Every plan fits the 80 GB A100 and plans its worst stage's activations
# within 10% of Korthikanti's formula for its recompute mode, or below it
# (column a/f; bench/paper_memory.sh says where the plan differs).  Known
# exceptions, stated by the table's note: the selective + SP variants of the
# 1.7B (tp 1) and 3.6B (tp 2) plans, which the papers did not run (Narayanan
# et al. used full recompute): 34/t sbh a layer is 57 and 48 GiB at
# microbatch 16, so even the formula's activations with the model states
# exceed 80 GB; for those the test checks that the formula does not fit and
# that the plan is still within 10% of it.
while read -r plan mode fits stage total acts grads formula af agf note; do
  check "$plan ($mode): activations $acts GiB within 10% of the formula's $formula GiB or below (a/f $af)" \
    awk -v r="$af" 'BEGIN { exit !(r <= 1.10) }'
  if [ "$fits" = yes ]; then
    check "$plan ($mode): fits in 80 GB (worst stage $stage: $total GiB)" true
  else
    check "$plan ($mode): does not fit ($total GiB), because the formula's own activations do not ($note)" \
      test "$note" = "formula does not fit"
    case "$plan.$mode" in narayanan_1_7b.selective|narayanan_3_6b.selective) ;;
      *) check "$plan ($mode) is one of the two stated exceptions" false ;; esac
  fi
done < <(awk 'NR > 2 && NF >= 10' "$WORK/table.txt")
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
