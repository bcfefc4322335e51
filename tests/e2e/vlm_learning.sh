#!/usr/bin/env bash
# VLM learning: plans/vlm_tiny.lua (a ViT, LLaVA's projector, a GPT-2) on
# `weft data vlm-synth` records ("a COLOUR SHAPE on the POSITION" under a
# drawn shape).  Without the image the three descriptive words are uniform
# and independent of the text: the generator states that floor, ln(4 * 3 * 4)
# / 3 = 1.2904 nats a word; with the image it is 0.  The same plan on the same
# records with every image blanked (all pixels 0, made here) must stay at the
# text-only floor (mean of the last 50 steps' descriptive loss within 5% of
# it: 50 steps x 32 samples x 3 words = 4800 draws, whose sample entropy has
# a standard deviation of about 0.02 nats), and the run that sees the images
# must go well below it (under half the floor).  One BLAS / OpenMP thread:
# these matrices are too small to share.
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
STEPS=${STEPS:-200}
msg=$("$WEFT" data vlm-synth -o "$WORK/vlm.bin" --image 32 --patch 8 --seq 24 --count 4096 --seed 3)
floor=$(sed -n 's/.* \([0-9.]*\) nats without the image.*/\1/p' <<<"$msg")
[ -n "$floor" ] || { echo "no floor in: $msg"; exit 1; }
python3 - "$WORK/vlm.bin" "$WORK/blank.bin" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
h = struct.unpack("<256i", bytes(d[:1024]))
img, rec = h[2] * h[3] * h[4], h[14]  # H*W*C, record bytes (runtime/common/data_vlm.h)
for r in range(h[6]):
    d[1024 + r * rec:1024 + r * rec + img] = bytes(img)
open(sys.argv[2], "wb").write(d)
PY
desc_mean() {  # mean descriptive loss of the last 50 steps
  tail -n 50 "$1" | awk '{ sub(/.*"loss_descriptive": /, ""); sub(/[,}].*/, ""); s += $0; n++ } END { printf "%.4f", s / n }'
}
for run in images blank; do
  data="$WORK/vlm.bin"; [ $run = blank ] && data="$WORK/blank.bin"
  build_plan $run plans/vlm_tiny.lua --set data.train="$data" --set train.steps=$STEPS
  run_plan $run --metrics "$WORK/$run.jsonl" >/dev/null
done
with=$(desc_mean "$WORK/images.jsonl") without=$(desc_mean "$WORK/blank.jsonl")
echo "descriptive loss (last 50 steps): $with nats with the images, $without blanked; text-only floor $floor"
check "blanked images stay at the text-only floor ($without vs $floor, within 5%)" \
  awk -v a="$without" -v f="$floor" 'BEGIN { d = a / f - 1; exit !(d < 0.05 && d > -0.05) }'
check "with the images the loss falls well below it ($with < 0.5 x $floor)" \
  awk -v a="$with" -v f="$floor" 'BEGIN { exit !(a < 0.5 * f) }'
echo "$passed passed, $failed failed"
[ $failed = 0 ]
