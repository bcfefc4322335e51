#!/usr/bin/env bash
# Run-time errors: a missing or malformed data file, tokens outside the
# vocabulary, the wrong rank count, a bad option: each gives a message naming
# the rank and the failing call, a non-zero exit, and no hang.
source "$(dirname "$0")/lib.sh"
PLAN=${PLAN:-plans/tiny.lua}
passed=0 failed=0
# expect_failure NAME PATTERN COMMAND...: must exit non-zero within 60 s with PATTERN in its output
expect_failure() {
  local name=$1 pattern=$2; shift 2
  local out rc=0
  out=$(timeout 60 "$@" 2>&1) || rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q -- "$pattern" <<<"$out"; then
    passed=$((passed + 1)); echo "ok   $name: $(grep -m1 -- "$pattern" <<<"$out")"
  else
    failed=$((failed + 1)); echo "FAIL $name (exit $rc): $(tail -n 3 <<<"$out")"
  fi
}
build_plan run "$PLAN" --set model.layers=1 --set model.hidden=32 --set model.seq=32
"$WEFT" data synth -o "$WORK/wide.bin" --vocab 1000 --tokens 5000 >/dev/null
printf 'not a token file at all, just some text that is long enough ..........' >"$WORK/bad.bin"
"$WEFT" data synth -o "$WORK/short.bin" --vocab 256 --tokens 10 >/dev/null
"$WEFT" data synth -o "$WORK/good.bin" --vocab 256 --tokens 5000 >/dev/null

expect_failure "missing data file" "rank [01]: wf_data_open failed.*nope.bin" \
  "$WORK/run/launch.sh" --data "$WORK/nope.bin"
expect_failure "malformed data file" "rank [01]: wf_data_open failed.*bad.bin" \
  "$WORK/run/launch.sh" --data "$WORK/bad.bin"
expect_failure "tokens outside the vocabulary" "rank [01]: .*>= the vocab size 256" \
  "$WORK/run/launch.sh" --data "$WORK/wide.bin"
expect_failure "data shorter than one sequence" "rank [01]: wf_data_open failed.*short.bin" \
  "$WORK/run/launch.sh" --data "$WORK/short.bin"
expect_failure "wrong rank count" "compiled for 2 ranks .* runs on 1" \
  mpirun --allow-run-as-root -np 1 "$WORK/run/build/stage0"
expect_failure "unknown option" "rank [01]: options failed.*unknown option" \
  "$WORK/run/launch.sh" --data "$WORK/good.bin" --bogus
expect_failure "resume from a missing checkpoint" "rank 0: wf_ckpt_load failed.*nowhere: no such checkpoint folder" \
  "$WORK/run/launch.sh" --data "$WORK/good.bin" --resume "$WORK/nowhere"
expect_failure "overflow injection into an fp32 program" "rank [01]: options failed.*--inject-overflow needs.*fp16" \
  "$WORK/run/launch.sh" --data "$WORK/good.bin" --inject-overflow 2
# --no-graph (CUDA: no step replayed as a CUDA graph) is accepted by the CPU
# backend, which has no graphs, and changes nothing there
"$WORK/run/launch.sh" --quiet --data "$WORK/good.bin" --steps 3 --metrics "$WORK/graph.jsonl" >/dev/null 2>&1
"$WORK/run/launch.sh" --quiet --data "$WORK/good.bin" --steps 3 --no-graph --metrics "$WORK/nograph.jsonl" \
  >"$WORK/nograph.log" 2>&1
check "--no-graph: accepted on the CPU, the same losses" \
  bash -c "test -s '$WORK/nograph.jsonl' && diff <(sed 's/, \"ms\".*//' '$WORK/graph.jsonl') <(sed 's/, \"ms\".*//' '$WORK/nograph.jsonl')"
build_plan half "$PLAN" --set model.layers=1 --set model.hidden=32 --set model.seq=32 --set precision=fp16
expect_failure "overflow injection on a rank that does not exist" "rank [01]: options failed.*RANK in 0 .. 1, got '2:5'" \
  "$WORK/half/launch.sh" --data "$WORK/good.bin" --inject-overflow 2:5
echo "$passed passed, $failed failed"
[ $failed = 0 ]
