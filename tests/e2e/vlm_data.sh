#!/usr/bin/env bash
# vlm_data.sh: `weft data vlm` on a folder of real PNG and JPEG files made here
# (PNG by python3's zlib, JPEG by tests/e2e/write_jpeg.c over libjpeg), then
# the records checked byte by byte; bad images (truncated PNG and JPEG, a text
# file named .jpg, a missing file) and a bad caption line reported by name,
# exit 1, nothing written; `weft data vlm-synth` prints its floors.
# Needs WEFT and WRITE_JPEG (the ctest entry sets both).
source "$(dirname "$0")/lib.sh"
WRITE_JPEG=${WRITE_JPEG:?set WRITE_JPEG to the write_jpeg helper}
IMG=$WORK/images
mkdir -p "$IMG"

# PNGs: solid RGB, 8-bit gray, RGBA (left half opaque blue, right half fully
# transparent, so composited over white), a palette, 16-bit RGB (scaled by
# 1/257: 0xC8C8 -> 200) and half-transparent red (over white: 255 a + 255
# (1 - a) = 255, 0 a + 255 (1 - a) = 127 for a = 128/255, rounded).
python3 - "$IMG" <<'PY'
import struct, sys, zlib
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
def png(path, w, h, ctype, pixel, depth=8, extra=b""):
    raw = b"".join(b"\0" + b"".join(pixel(x, y) for x in range(w)) for y in range(h))
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 0))
            + extra + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    open(path, "wb").write(data)
    return data
d = sys.argv[1]
png(d + "/red.png", 64, 48, 2, lambda x, y: bytes((200, 30, 90)))
png(d + "/gray.png", 40, 40, 0, lambda x, y: bytes((77,)))
png(d + "/half.png", 64, 32, 6, lambda x, y: bytes((0, 0, 255, 255) if x < 32 else (9, 9, 9, 0)))
png(d + "/pal.png", 16, 16, 3, lambda x, y: bytes((1,)), extra=chunk(b"PLTE", bytes((1, 2, 3, 10, 220, 130))))
png(d + "/d16.png", 33, 40, 2, lambda x, y: struct.pack(">3H", 0xC8C8, 0x1E1E, 0x5A5A), depth=16)
png(d + "/a8.png", 32, 32, 6, lambda x, y: bytes((255, 0, 0, 128)))
big = png(d + "/big.png", 300, 200, 2, lambda x, y: bytes(((x * 7) % 256, y % 256, 128)))
open(d + "/trunc.png", "wb").write(big[: len(big) // 2])
PY
"$WRITE_JPEG" "$IMG/green.jpg" 50 50 20 200 40
"$WRITE_JPEG" "$IMG/grayj.jpg" 30 60 150
"$WRITE_JPEG" "$IMG/big.jpg" 640 480 10 20 30
head -c 1000 "$IMG/big.jpg" >"$IMG/trunc.jpg"
echo "this is not a jpeg" >"$IMG/text.jpg"

cat >"$WORK/good.jsonl" <<'J'
{"image": "red.png", "text": "a red picture"}
{"image": "gray.png", "ids": [1, 2, 300, 4]}

{"image": "half.png", "text": "blue | white"}
{"image": "green.jpg", "text": "green"}
{"image": "grayj.jpg", "text": "gray jpeg"}
{"image": "pal.png", "text": "palette"}
{"image": "d16.png", "text": "16-bit"}
{"image": "a8.png", "text": "alpha"}
J
OUT=$WORK/out.bin
check "weft data vlm writes 8 records" \
  "$WEFT" data vlm "$IMG" "$WORK/good.jsonl" -o "$OUT" --image 32 --patch 8 --seq 64 --vocab 512

# The records, read with the layout of runtime/common/data_vlm.h.  Tolerances:
# PNG pixels are exact (an area average of equal values, rounded); JPEG ones
# within 3 levels: libjpeg's RGB <-> YCbCr conversions round each way (up to
# about 1.5 levels per channel) and quality 95 quantises the DC term by 1-2.
check "records: header, sizes, pixels, caption tokens, masks" python3 - "$OUT" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
h = struct.unpack("<256i", b[:1024])
assert h[0] == 0x4D4C5657 and h[1] == 1, h[:2]
H, W, C, S, N, V, IMGTOK, P, PAD, PATCH, START, DESC, REC = h[2:15]
assert (H, W, C, S, N, V, IMGTOK, P, PAD, PATCH) == (32, 32, 3, 64, 8, 512, 256, 16, 511, 8), h[:12]
assert REC == 32 * 32 * 3 + 3 * 65 and len(b) == 1024 + 8 * REC, (REC, len(b))
def rec(i):
    r = b[1024 + i * REC: 1024 + (i + 1) * REC]
    img = r[:3072]
    tok = struct.unpack("<65H", r[3072:3072 + 130])
    return img, tok, r[3072 + 130:]
def px(img, x, y): return tuple(img[(y * 32 + x) * 3: (y * 32 + x) * 3 + 3])
def caption(i, want):
    img, tok, m = rec(i)
    n = len(want)
    assert tok[:16] == (256,) * 16 and m[:16] == b"\0" * 16, (i, tok[:16])
    assert list(tok[16:16 + n]) == want and m[16:16 + n] == b"\1" * n, (i, tok[16:16 + n])
    assert tok[16 + n:] == (511,) * (49 - n) and m[16 + n:] == b"\0" * (49 - n), i
    return img
img = caption(0, list(b"a red picture"))
assert all(px(img, x, y) == (200, 30, 90) for x in range(32) for y in range(32)), px(img, 0, 0)
img = caption(1, [1, 2, 300, 4])
assert all(px(img, x, y) == (77, 77, 77) for x in range(32) for y in range(32)), px(img, 0, 0)
img = caption(2, list(b"blue | white"))
# 64 x 32 -> short side 32, centre crop: source columns 16..47, blue below 32
assert px(img, 0, 0) == (0, 0, 255) and px(img, 15, 31) == (0, 0, 255), px(img, 15, 31)
assert px(img, 16, 0) == (255, 255, 255) and px(img, 31, 31) == (255, 255, 255), px(img, 16, 0)
img = caption(3, list(b"green"))
assert all(max(abs(a - b) for a, b in zip(px(img, x, y), (20, 200, 40))) <= 3
           for x in range(32) for y in range(32)), px(img, 5, 5)
img = caption(4, list(b"gray jpeg"))
assert all(px(img, x, y)[0] == px(img, x, y)[1] == px(img, x, y)[2] and abs(px(img, x, y)[0] - 150) <= 3
           for x in range(32) for y in range(32)), px(img, 5, 5)
def solid(img, want): return all(px(img, x, y) == want for x in range(32) for y in range(32))
img = caption(5, list(b"palette"))
assert solid(img, (10, 220, 130)), px(img, 0, 0)
img = caption(6, list(b"16-bit"))
assert solid(img, (200, 30, 90)), px(img, 0, 0)
img = caption(7, list(b"alpha"))
assert solid(img, (255, 127, 127)), px(img, 0, 0)
print("  8 records of %d bytes; pixels and tokens as written" % REC)
PY

# Bad inputs: every one named, exit 1, the previous output untouched, no
# temporary left beside it.
cat >"$WORK/bad.jsonl" <<'J'
{"image": "red.png", "text": "fine"}
{"image": "trunc.png", "text": "cut in half"}
{"image": "text.jpg", "text": "not an image"}
{"image": "missing.png", "text": "absent"}
{"image": "trunc.jpg", "text": "cut jpeg"}
{"image": "big.png", "text": "this caption is far too long for sixty-four positions"}
not json
{"image": "big.png", "ids": [1, 256]}
J
before=$(sha256sum "$OUT")
set +e
"$WEFT" data vlm "$IMG" "$WORK/bad.jsonl" -o "$OUT" --image 32 --patch 8 --seq 64 --vocab 512 \
  >"$WORK/bad.out" 2>"$WORK/bad.err"
rc=$?
set -e
sed 's/^/  | /' "$WORK/bad.err"
check "bad inputs: exit 1" test $rc = 1
check "truncated PNG named" grep -q "trunc.png: corrupt or truncated PNG" "$WORK/bad.err"
check "text file named .jpg named" grep -q "text.jpg: not a PNG or JPEG" "$WORK/bad.err"
check "missing file named" grep -q "missing.png: cannot open: No such file" "$WORK/bad.err"
check "truncated JPEG named" grep -q "trunc.jpg: corrupt or truncated JPEG" "$WORK/bad.err"
check "long caption: file:line and --seq" grep -q "bad.jsonl:6: field 'text' has 53 bytes.*--seq" "$WORK/bad.err"
check "bad JSON line: file:line" grep -q "bad.jsonl:7: not a JSON object" "$WORK/bad.err"
check "image token in ids: file:line" grep -q "bad.jsonl:8: field 'ids'\[1\]" "$WORK/bad.err"
check "summary: 7 bad, nothing written" grep -q "7 bad image.*nothing written" "$WORK/bad.err"
check "previous output unchanged" test "$before" = "$(sha256sum "$OUT")"
check "no temporary left" test "$(ls "$WORK" | grep -c 'out.bin.')" = 0
rm -f "$WORK/none.bin"
"$WEFT" data vlm "$IMG" "$WORK/bad.jsonl" -o "$WORK/none.bin" --image 32 --patch 8 --seq 64 \
  2>/dev/null && true
check "a failed first write leaves no file" test ! -e "$WORK/none.bin"

check "vlm-synth prints both floors" bash -c '"$0" data vlm-synth -o "$1" --count 64 --seed 3 \
  | tee /dev/stderr | grep -q "1.290400 nats without the image.*0.000000 nats with it"' "$WEFT" "$WORK/s.bin"
check "vlm-synth file size" test "$(stat -c %s "$WORK/s.bin")" = $((1024 + 64 * (32 * 32 * 3 + 3 * 25)))

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
