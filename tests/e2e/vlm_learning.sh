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
# must go well below it (under half the floor).  300 steps: the projector
# reads the last encoder layer's output without a norm (LLaVA's features), and
# the captions start to use the image later than with one (0.40 nats at 200
# steps, 0.13 at 300).  One BLAS / OpenMP thread: these matrices are too small to
# share.
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
STEPS=${STEPS:-300}
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

# Real files: a folder of PNGs (python3's zlib) and JPEGs (tests/e2e/
# write_jpeg.c over libjpeg, when WRITE_JPEG is set) with byte-level
# captions goes through `weft data vlm` and trains: the same plan at the
# byte vocabulary (258: bytes, the image token 256, pad 257) and seq 40,
# 30 steps on the 6 records, must bring the loss under half its first value.
IMG=$WORK/images
mkdir -p "$IMG"
python3 - "$IMG" <<'PY'
import struct, sys, zlib
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
def png(path, w, h, pixel):
    raw = b"".join(b"\0" + b"".join(pixel(x, y) for x in range(w)) for y in range(h))
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
d = sys.argv[1]
png(d + "/red.png", 48, 40, lambda x, y: bytes((220, 30, 40)))
png(d + "/stripes.png", 64, 64, lambda x, y: bytes((250, 250, 250) if (x // 8) % 2 else (10, 10, 10)))
png(d + "/left.png", 40, 40, lambda x, y: bytes((0, 0, 230) if x < 20 else (240, 240, 240)))
png(d + "/top.png", 40, 40, lambda x, y: bytes((0, 200, 0) if y < 20 else (240, 240, 240)))
PY
captions='{"image": "red.png", "text": "all red"}
{"image": "stripes.png", "text": "black and white stripes"}
{"image": "left.png", "text": "blue on the left"}
{"image": "top.png", "text": "green on top"}'
if [ -n "${WRITE_JPEG:-}" ]; then
  "$WRITE_JPEG" "$IMG/yellow.jpg" 50 50 230 220 20
  "$WRITE_JPEG" "$IMG/gray.jpg" 30 60 128
  captions="$captions
{\"image\": \"yellow.jpg\", \"text\": \"yellow photo\"}
{\"image\": \"gray.jpg\", \"text\": \"gray photo\"}"
fi
echo "$captions" >"$WORK/captions.jsonl"
"$WEFT" data vlm "$IMG" "$WORK/captions.jsonl" -o "$WORK/real.bin" --image 32 --patch 8 --seq 40 >/dev/null
build_plan real plans/vlm_tiny.lua --set data.train="$WORK/real.bin" --set model.llm.vocab=258 \
  --set model.llm.seq=40 --set model.image_token=256 --set train.steps=30
run_plan real --metrics "$WORK/real.jsonl" >/dev/null
first=$(head -n 1 "$WORK/real.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
last=$(tail -n 1 "$WORK/real.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
check "weft data vlm on $(grep -c image "$WORK/captions.jsonl") PNG/JPEG files trains: loss $first -> $last (under half)" \
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.5 * a) }'
echo "$passed passed, $failed failed"
[ $failed = 0 ]
