#!/usr/bin/env bash
# ZeRO-3's start-up without the stage's whole parameters in host memory
# (runtime/common/zero_startup.c): each rank makes or reads only its own
# range of each parameter.  Checked here: the weights are the unsharded
# run's bit for bit (initialised and resumed), and every rank's measured
# start-up host peak, which the runtime logs beside the bound weft check
# states (runtime/common/startup_peak.h), is within that bound and below
# (stage bytes) / dp + the largest tensor's bytes (the old way held the
# stage's bytes whole on every rank).
source "$(dirname "$0")/lib.sh"
PLAN=${PLAN:-plans/tiny.lua}
DATA=$(make_data)
set=(--set train.steps=4 --set data.train="$DATA" --set batch.micro=4 --set batch.global=16
     --set model.layers=2 --set model.hidden=64 --set model.seq=64 --set buckets.mb=0.02)

# startup_peaks LOG PROGRAM RANKS DP: every rank's line, within its bound and
# under the stage's parameter bytes / dp + its largest tensor's bytes (tp 1:
# a parameter's numel is its whole tensor's).  The ranks of a stage are its
# dp group: rank r is on stage r / DP (launch.sh's order, dp fastest).
startup_peaks() {
  local log=$1 prog=$2 ranks=$3 dp=$4 n=0 r peak bound stage numel most limit
  while read -r r peak bound; do
    n=$((n + 1))
    stage=$((r / dp))
    numel=$(sed -n 's/.*\.param_numel = \([0-9]*\)L.*/\1/p' "$prog/stage$stage.c")
    most=$(awk -F', *' '/^    \{ "/ { if ($3 + 0 > m) m = $3 + 0 } END { print m }' "$prog/stage$stage.c")
    limit=$((4 * numel / dp + 4 * most))
    echo "rank $r (stage $stage): start-up peak $peak bytes, bound $bound, stage/dp + largest tensor $limit"
    [ "$peak" -le "$bound" ] && [ "$peak" -lt "$limit" ] || { echo "rank $r: over" >&2; return 1; }
  done < <(sed -n 's/^start-up host memory peak on rank \([0-9]*\): \([0-9]*\) bytes, bound \([0-9]*\) (weft check)$/\1 \2 \3/p' "$log")
  [ "$n" = "$ranks" ]
}
# own_piece INIT_LOG RESUME_LOG: ZeRO-3 resuming reads a tensor a piece at a
# time (runtime/common/ckpt.c): every rank's resume peak is at most its own
# range plus a piece no larger than it, twice the initialising bound (the
# own range alone); a whole tensor read at once is over it on tiny
# (wte, 256 x 64 floats, against a largest own range of a bucket's half).
own_piece() {
  local pat='s/^start-up host memory peak on rank \([0-9]*\): \([0-9]*\) bytes, bound \([0-9]*\) (weft check)$/\1 \2 \3/p'
  local r peak bound init n=0
  while read -r r peak bound; do
    init=$(sed -n "$pat" "$1" | awk -v r="$r" '$1 == r { print $3 }')
    echo "rank $r: resume peak $peak bytes, initialising bound $init, twice that $((2 * init))"
    [ -n "$init" ] && [ "$peak" -le $((2 * init)) ] || return 1
    n=$((n + 1))
  done < <(sed -n "$pat" "$2")
  [ "$n" -gt 0 ]
}
same_files() {  # same_files A B: every tensor of the model and optimizer files, bit for bit
  "$WEFT" ckpt diff "$1/model.safetensors" "$2/model.safetensors" >/dev/null &&
    "$WEFT" ckpt diff "$1/optimizer.safetensors" "$2/optimizer.safetensors" >/dev/null
}

build_plan plain "$PLAN" "${set[@]}"
run_plan plain --steps 0 --save "$WORK/plain_init" >/dev/null
for lay in "dp2 1" "dp2pp2 2"; do
  read -r name pp <<<"$lay"
  build_plan "$name" "$PLAN" "${set[@]}" --set mesh.dp=2 --set mesh.pp="$pp" --set zero=3
  "$WORK/$name/launch.sh" --steps 0 --save "$WORK/${name}_init" >"$WORK/${name}_init.log"
  check "ZeRO-3 $name: initial weights are the unsharded run's, bit for bit" \
    same_files "$WORK/${name}_init" "$WORK/plain_init"
  check "ZeRO-3 $name initialising: each rank's start-up host peak within the bound, under stage/dp + a tensor" \
    startup_peaks "$WORK/${name}_init.log" "$WORK/$name" $((2 * pp)) 2
  # resumed from the unsharded run's step-0 checkpoint (resharded on load)
  # and saved again at once: what was loaded, bit for bit
  "$WORK/$name/launch.sh" --steps 0 --resume "$WORK/plain_init" --save "$WORK/${name}_again" >"$WORK/${name}_resume.log"
  check "ZeRO-3 $name resumed: the loaded weights and moments are the checkpoint's, bit for bit" \
    same_files "$WORK/${name}_again" "$WORK/plain_init"
  check "ZeRO-3 $name resuming: each rank's start-up host peak within the bound, under stage/dp + a tensor" \
    startup_peaks "$WORK/${name}_resume.log" "$WORK/$name" $((2 * pp)) 2
  check "ZeRO-3 $name resuming: each rank's peak at most its own range and a piece as large (no whole tensor)" \
    own_piece "$WORK/${name}_init.log" "$WORK/${name}_resume.log"
done
# LLaMA (projections checkpointed (out, in): transposed) at tp 2 x dp 2 under
# ZeRO-3, resumed from its unsharded checkpoint, resharded through pieces;
# with pieces of 100 floats (WEFT_CKPT_PIECE, below the projections' 176 and
# 64 output rows: one column, rows in pieces) and of 3000 (every row, a few
# columns), the same values
lset=(--set train.steps=4 --set data.train="$DATA" --set batch.micro=4 --set batch.global=16 --set buckets.mb=0.02)
build_plan l_plain plans/llama_tiny.lua "${lset[@]}" --set mesh.dp=1
run_plan l_plain --steps 0 --save "$WORK/l_plain_init" >/dev/null
build_plan l_tp2 plans/llama_tiny.lua "${lset[@]}" --set mesh.dp=2 --set mesh.tp=2 --set zero=3
for piece in "" 100 3000; do
  WEFT_CKPT_PIECE=$piece "$WORK/l_tp2/launch.sh" --steps 0 --resume "$WORK/l_plain_init" \
    --save "$WORK/l_tp2_again$piece" >"$WORK/l_tp2_resume$piece.log"
  check "LLaMA ZeRO-3 tp 2 dp 2 resumed (pieces ${piece:-as stated}): the weights and moments are the checkpoint's, bit for bit" \
    same_files "$WORK/l_tp2_again$piece" "$WORK/l_plain_init"
done
within_bound() {  # within_bound LOG RANKS: every rank's line, its peak within its bound
  sed -n 's/^start-up host memory peak on rank \([0-9]*\): \([0-9]*\) bytes, bound \([0-9]*\) (weft check)$/\2 \3/p' "$1" |
    awk -v n="$2" '{ print "start-up peak " $1 " bytes, bound " $2; if ($1 > $2) bad = 1 } END { exit bad || NR != n }'
}
human() {  # human LOG: rank 0's bound as weft check prints bytes (compiler/report.c, program_human_bytes)
  sed -n 's/^start-up host memory peak on rank 0: [0-9]* bytes, bound \([0-9]*\) (weft check)$/\1/p' "$1" |
    awk '{ b = $1; u = 0; split("B KiB MiB GiB", unit, " "); while (b >= 1024 && u < 3) { b /= 1024; u++ }
           if (u) printf "%.2f %s", b, unit[u + 1]; else printf "%.0f B", b }'
}
exact_peaks() {  # exact_peaks LOG RANKS: every rank's peak equal to its bound
  sed -n 's/^start-up host memory peak on rank \([0-9]*\): \([0-9]*\) bytes, bound \([0-9]*\) (weft check)$/\2 \3/p' "$1" |
    awk -v n="$2" '{ print "start-up peak " $1 " bytes, bound " $2; if ($1 != $2) bad = 1 } END { exit bad || NR != n }'
}
check "LLaMA ZeRO-3 tp 2 dp 2 resuming: each rank's start-up host peak within the bound" \
  within_bound "$WORK/l_tp2_resume.log" 4
# 16-bit: bf16 masters and 16-bit parameter shards, the same start-up
build_plan b_plain "$PLAN" "${set[@]}" --set precision=bf16
build_plan b_dp2 "$PLAN" "${set[@]}" --set precision=bf16 --set mesh.dp=2 --set zero=3
run_plan b_plain --steps 0 --save "$WORK/b_plain_init" >/dev/null
"$WORK/b_dp2/launch.sh" --steps 0 --save "$WORK/b_dp2_init" >"$WORK/b_dp2_init.log"
check "ZeRO-3 bf16: initial weights are the unsharded run's, bit for bit" \
  same_files "$WORK/b_dp2_init" "$WORK/b_plain_init"
check "ZeRO-3 bf16 initialising: each rank's start-up host peak within the bound" \
  startup_peaks "$WORK/b_dp2_init.log" "$WORK/b_dp2" 2 2
# the runtime's bound is weft check's line (one stage: the same bytes, here in KiB)
"$WEFT" check "$PLAN" "${set[@]}" --set mesh.dp=2 --set zero=3 >"$WORK/check.txt"
kib() { sed -n 's/^start-up host memory peak on rank 0: [0-9]* bytes, bound \([0-9]*\) (weft check)$/\1/p' "$1" |
        awk '{ printf "%.2f KiB", $1 / 1024 }'; }
check "weft check states the runtime's start-up bounds (ZeRO-3 dp 2: initialising, resuming)" \
  grep -qF "start-up host memory peak per rank: $(kib "$WORK/dp2_init.log") initialising, $(kib "$WORK/dp2_resume.log") resuming" \
  "$WORK/check.txt"
# without ZeRO-3 the same line and log: the parameters made in place, a
# resume through one whole tensor at a time
"$WORK/plain/launch.sh" --steps 0 --resume "$WORK/plain_init" >"$WORK/plain_resume.log"
check "unsharded resume: the start-up host peak within the bound" \
  startup_peaks "$WORK/plain_resume.log" "$WORK/plain" 2 2
# ZeRO-1 / 2 (moments read into their shards) and bf16 without ZeRO-3 (16-bit
# parameters made as floats first, here ZeRO-1 at micro 1 too) resuming.
# Without ZeRO-3 a resume reads the parameters through one whole tensor (and
# a transposed one's copy), then the moments through a piece and the own
# range: the bound is the larger pair (startup_peak.h), exact, so every
# rank's measured peak equals it.  tiny dp 2 under ZeRO-1 / 2: the whole wte
# (256 x 64 floats, 65536 bytes) is larger than a piece and an own range of
# a bucket's half; a bound adding an own range to the whole tensor (a read
# buffer the runtime does not use) is over it.  Unsharded (plain): a piece
# and an own range of wte, twice the whole tensor.
check "unsharded resume: the start-up host peak equals its bound (exact)" \
  exact_peaks "$WORK/plain_resume.log" 2
for lay in "z1 --set zero=1" "z2 --set zero=2" "b_z0 --set precision=bf16" \
           "b_z1m1 --set precision=bf16 --set zero=1 --set batch.micro=1"; do
  read -r name opts <<<"$lay"
  build_plan "$name" "$PLAN" "${set[@]}" $opts
  "$WORK/$name/launch.sh" --steps 2 --resume "$WORK/plain_init" >"$WORK/${name}_resume.log"
  # (b_z1m1 holds its 16-bit parameters as floats in host memory, more than stage/dp)
  [ "$name" = b_z1m1 ] || check "$name resuming: each rank's start-up host peak within the bound" \
    startup_peaks "$WORK/${name}_resume.log" "$WORK/$name" 2 2
  check "$name resuming: each rank's start-up host peak equals its bound (exact)" \
    exact_peaks "$WORK/${name}_resume.log" 2
  "$WEFT" check "$PLAN" "${set[@]}" $opts >"$WORK/$name.check.txt"
  check "weft check states $name's start-up bound resuming ($(human "$WORK/${name}_resume.log"))" \
    grep -qF " initialising, $(human "$WORK/${name}_resume.log") resuming" "$WORK/$name.check.txt"
done
# ZeRO-1 at 0.1 MiB buckets: wte's bucket is split unevenly between the two
# ranks, so rank 0 owns more of wte than rank 1 and its moments' piece and
# own range outgrow the whole tensor; each rank's bound counts its own
# ranges (startup_peak.h's wf_startup_own on its dp rank), so both are
# exact and differ, and weft check states the larger
build_plan z1_uneven "$PLAN" "${set[@]}" --set zero=1 --set buckets.mb=0.1
"$WORK/z1_uneven/launch.sh" --steps 0 --resume "$WORK/plain_init" >"$WORK/z1_uneven_resume.log"
check "ZeRO-1 uneven own ranges: each rank's start-up host peak equals its own bound (exact)" \
  exact_peaks "$WORK/z1_uneven_resume.log" 2
check "ZeRO-1 uneven own ranges: the two ranks' bounds differ" \
  test "$(sed -n 's/^start-up host memory peak on rank [01]: [0-9]* bytes, bound \([0-9]*\) (weft check)$/\1/p' \
          "$WORK/z1_uneven_resume.log" | sort -u | wc -l)" = 2
"$WEFT" check "$PLAN" "${set[@]}" --set zero=1 --set buckets.mb=0.1 >"$WORK/z1_uneven.check.txt"
check "weft check states the larger (rank 0's, $(human "$WORK/z1_uneven_resume.log"))" \
  grep -qF " initialising, $(human "$WORK/z1_uneven_resume.log") resuming" "$WORK/z1_uneven.check.txt"
# ZeRO-3 over dp 3 at 0.1 MiB buckets: wte's bucket is split in three, so
# ranks 0 and 1 own more of it than rank 2 and their own ranges, pieces and
# bounds are larger; resumed from the unsharded checkpoint with the stated
# piece (every rank's peak equal to its own bound, the bounds not all
# equal) and with pieces of 7 floats (within it), the same values
build_plan z3_dp3 "$PLAN" "${set[@]}" --set zero=3 --set mesh.dp=3 --set batch.global=24 --set buckets.mb=0.1
for piece in "" 7; do
  WEFT_CKPT_PIECE=$piece "$WORK/z3_dp3/launch.sh" --steps 0 --resume "$WORK/plain_init" \
    --save "$WORK/z3_dp3_again$piece" >"$WORK/z3_dp3_resume$piece.log"
  check "ZeRO-3 dp 3 uneven own ranges resumed (pieces ${piece:-as stated}): the checkpoint's values, bit for bit" \
    same_files "$WORK/z3_dp3_again$piece" "$WORK/plain_init"
done
check "ZeRO-3 dp 3 uneven own ranges: each rank's start-up host peak equals its own bound (exact)" \
  exact_peaks "$WORK/z3_dp3_resume.log" 3
check "ZeRO-3 dp 3 uneven own ranges, pieces of 7 floats: each rank's peak within its bound" \
  within_bound "$WORK/z3_dp3_resume7.log" 3
check "ZeRO-3 dp 3 uneven own ranges: the ranks' bounds differ" \
  test "$(sed -n 's/^start-up host memory peak on rank [0-2]: [0-9]* bytes, bound \([0-9]*\) (weft check)$/\1/p' \
          "$WORK/z3_dp3_resume.log" | sort -u | wc -l)" = 2
# bf16 without ZeRO-3: the 16-bit parameters are made or loaded as floats in
# an idle arena where one holds the stage (startup_peak.h's
# wf_startup_idle_arena, the choice the runtime makes), else in host memory;
# the bound counts host memory only where no arena holds them, so here it is
# exact (slack 0: the runtime allocates just these buffers): every rank's
# measured peak equals it, and weft check's line states it.  tiny at micro 4
# (b_z0): initialising in the AdamW first moment (0 bytes), resuming in the
# activation arena (one whole tensor read and its own part); at micro 1 (an
# activation arena smaller than the stage) resuming in host memory; under
# ZeRO-2 at micro 1 (moments a dp shard, gradients bucket buffers)
# initialising in host memory too.
"$WORK/b_z0/launch.sh" --steps 0 >"$WORK/b_z0_init.log"
build_plan b_m1 "$PLAN" "${set[@]}" --set precision=bf16 --set batch.micro=1
"$WORK/b_m1/launch.sh" --steps 0 >"$WORK/b_m1_init.log"
"$WORK/b_m1/launch.sh" --steps 0 --resume "$WORK/plain_init" >"$WORK/b_m1_resume.log"
build_plan b_z2m1 "$PLAN" "${set[@]}" --set precision=bf16 --set batch.micro=1 --set zero=2
"$WORK/b_z2m1/launch.sh" --steps 0 >"$WORK/b_z2m1_init.log"
# (PROGRAM|where it initialises|where it resumes, - for no resume here|its settings)
for lay in "b_z0|the AdamW first moment|the activation arena|" \
           "b_m1|the AdamW first moment|host memory|--set batch.micro=1" \
           "b_z2m1|host memory|-|--set batch.micro=1 --set zero=2"; do
  IFS='|' read -r prog init_in resume_in opts <<<"$lay"  # (not name: check's own)
  "$WEFT" check "$PLAN" "${set[@]}" --set precision=bf16 $opts >"$WORK/$prog.check.txt"
  check "bf16 without ZeRO-3, $prog initialising (in $init_in): each rank's start-up host peak equals its bound" \
    exact_peaks "$WORK/${prog}_init.log" 2
  check "weft check states $prog's start-up bound initialising ($(human "$WORK/${prog}_init.log"), in $init_in)" \
    eval 'grep -qF "start-up host memory peak per rank: $(human "$WORK/${prog}_init.log") initialising" "$WORK/$prog.check.txt" &&
          grep -qF "initialising in $init_in," "$WORK/$prog.check.txt"'
  [ "$resume_in" = - ] && continue
  check "bf16 without ZeRO-3, $prog resuming (in $resume_in): each rank's start-up host peak equals its bound" \
    exact_peaks "$WORK/${prog}_resume.log" 2
  check "weft check states $prog's start-up bound resuming ($(human "$WORK/${prog}_resume.log"), in $resume_in)" \
    eval 'grep -qF " initialising, $(human "$WORK/${prog}_resume.log") resuming" "$WORK/$prog.check.txt" &&
          grep -qF "resuming in $resume_in;" "$WORK/$prog.check.txt"'
done
build_plan z3_2bw "$PLAN" "${set[@]}" --set precision=bf16 --set mesh.dp=2 --set mesh.pp=2 --set zero=3 \
  --set pipeline.schedule=pipedream-2bw --set clip_grad_norm=0
run_plan z3_2bw --steps 2 --save "$WORK/z3_2bw_2" >/dev/null
"$WORK/z3_2bw/launch.sh" --steps 2 --resume "$WORK/z3_2bw_2" --save "$WORK/z3_2bw_again" >"$WORK/z3_2bw_resume.log"
check "ZeRO-3 2BW bf16 resuming: each rank's start-up host peak within the bound, under stage/dp + a tensor" \
  startup_peaks "$WORK/z3_2bw_resume.log" "$WORK/z3_2bw" 4 2
check "ZeRO-3 2BW bf16: both versions and the moments loaded bit for bit (saved again at once)" \
  same_files "$WORK/z3_2bw_again" "$WORK/z3_2bw_2"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
