#!/usr/bin/env bash
# The main job: build weft, make the synthetic data, check and compile the
# default plan, build its programs and train on 2 ranks under mpirun.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAN=${1:-plans/tiny.lua}
bash scripts/build.sh
mkdir -p data
[ -f data/synth.bin ] || build/compiler/weft data synth -o data/synth.bin --tokens 2000000
echo "== weft check $PLAN"
build/compiler/weft check "$PLAN"
name=$(basename "$PLAN" .lua)
echo "== weft compile $PLAN -o generated/$name"
build/compiler/weft compile "$PLAN" -o "generated/$name"
cmake -S "generated/$name" -B "generated/$name/build" >/dev/null
cmake --build "generated/$name/build" >/dev/null
echo "== the step schedule (generated/$name/stage0.c)"
sed -n '/^static void step/,/^}/p' "generated/$name/stage0.c"
echo "== generated/$name/launch.sh"
"generated/$name/launch.sh" --save "generated/$name/checkpoint"
