#!/usr/bin/env bash
# Learning: the default plan, at the README demo's step budget (its
# train.steps), on `weft data synth` data, brings the loss to within 10% of
# the language's entropy floor (mean of the last 10 steps' losses).
source "$(dirname "$0")/lib.sh"
PLAN=${PLAN:-plans/tiny.lua}
msg=$("$WEFT" data synth -o "$WORK/synth.bin" --tokens 1000000 --vocab 256 --branch 4 --seed 11)
floor=$(sed 's/.*entropy floor \([0-9.]*\).*/\1/' <<<"$msg")
build_plan tiny "$PLAN" --set data.train="$WORK/synth.bin"
run_plan tiny --metrics "$WORK/m.jsonl" >/dev/null
tail -n 10 "$WORK/m.jsonl" | awk -v floor="$floor" '
  { sub(/.*"loss": /, ""); sub(/,.*/, ""); sum += $0; n++ }
  END { mean = sum / n; ratio = mean / floor;
        printf "mean loss of the last %d steps %.4f, entropy floor %.4f, ratio %.3f\n", n, mean, floor, ratio;
        ok = ratio <= 1.10; printf "%d passed, %d failed\n", ok, !ok; exit !ok }'
