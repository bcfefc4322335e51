/* test_precision: bf16 / fp16 rounding (runtime/cpu/precision.c).
 *
 *   test_precision        hand-picked values: ties to even, the fp16 maximum
 *                         and its overflow threshold, subnormals, inf, NaN
 *   test_precision -      also compares against reference lines on stdin,
 *                         "F32BITS FP16BITS BF16BITS" in hex, written by an
 *                         independent implementation (precision_reference.py:
 *                         Python's struct 'e' for fp16, exact fractions for bf16)
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "weft/rt.h"

static int failures, checks;

static float from_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static void expect16(const char *what, float x, uint16_t got, uint16_t want) {
    checks++;
    if (got == want) return;
    failures++;
    if (failures <= 20) printf("FAIL %s(%a = %.9g): got 0x%04x, want 0x%04x\n", what, x, x, got, want);
}

static void fp16(float x, uint16_t want) { expect16("fp16", x, wf_fp16_bits(x), want); }
static void bf16(float x, uint16_t want) { expect16("bf16", x, wf_bf16_bits(x), want); }

static void hand_values(void) {
    /* exact values */
    fp16(0.0f, 0x0000); fp16(-0.0f, 0x8000); fp16(1.0f, 0x3c00); fp16(-2.0f, 0xc000);
    fp16(65504.0f, 0x7bff); fp16(0x1p-14f, 0x0400); fp16(0x1p-24f, 0x0001); fp16(0x3ffp-24f, 0x03ff);
    /* ties to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 (even: 1) */
    fp16(1.0f + 0x1p-11f, 0x3c00); fp16(1.0f + 3 * 0x1p-11f, 0x3c02);
    fp16(1.0f + 0x1p-11f + 0x1p-20f, 0x3c01);  /* just above the tie */
    /* the fp16 maximum and where overflow starts: 65520 is the tie with 2^16 */
    fp16(65519.0f, 0x7bff); fp16(65520.0f, 0x7c00); fp16(-65520.0f, 0xfc00); fp16(1e6f, 0x7c00);
    fp16(INFINITY, 0x7c00); fp16(-INFINITY, 0xfc00);
    /* subnormals: 2^-25 ties to 0, 3 * 2^-26 rounds up to 2^-24, 1.5 * 2^-24 ties to 2 * 2^-24 */
    fp16(0x1p-25f, 0x0000); fp16(-0x1p-25f, 0x8000); fp16(3 * 0x1p-26f, 0x0001);
    fp16(1.5f * 0x1p-24f, 0x0002); fp16(2.5f * 0x1p-24f, 0x0002); fp16(1e-10f, 0x0000);
    fp16(0x1p-14f - 0x1p-26f, 0x0400);  /* rounds up into the smallest normal */
    /* bf16: the top half of an fp32, ties to even */
    bf16(1.0f, 0x3f80); bf16(-1.0f, 0xbf80); bf16(1.0f + 0x1p-8f, 0x3f80); bf16(1.0f + 3 * 0x1p-8f, 0x3f82);
    bf16(1.0f + 0x1p-8f + 0x1p-20f, 0x3f81); bf16(65520.0f, 0x4780); bf16(INFINITY, 0x7f80);
    bf16(0x1p-133f, 0x0001);  /* fp32 subnormals keep bf16's 7 bits */
    bf16(from_bits(0x7f7fffff), 0x7f80);  /* FLT_MAX rounds to inf */
    /* NaN stays NaN, quiet */
    uint16_t h = wf_fp16_bits(NAN), b = wf_bf16_bits(from_bits(0x7f800001));
    checks += 3;
    if ((h & 0x7c00) != 0x7c00 || !(h & 0x3ff) || !isnan(wf_fp16_value(h))) failures++, printf("FAIL fp16 NaN 0x%04x\n", h);
    if ((b & 0x7f80) != 0x7f80 || !(b & 0x7f)) failures++, printf("FAIL bf16 NaN 0x%04x\n", b);
    if (!isnan(wf_fp16(NAN)) || !isnan(wf_bf16(NAN))) failures++, printf("FAIL rounded NaN is not NaN\n");
    /* the way back is exact, and rounding is idempotent */
    for (uint32_t u = 0; u < 0x7c00; u++) {
        float v = wf_fp16_value((uint16_t)u);
        expect16("fp16 round trip", v, wf_fp16_bits(v), (uint16_t)u);
        expect16("fp16 round trip", -v, wf_fp16_bits(-v), (uint16_t)(u | 0x8000));
    }
    float arr[3] = { 1.0f + 0x1p-11f, 70000.0f, 0x1p-26f };
    wf_to_fp16(NULL, arr, 3);
    checks++;
    if (arr[0] != 1.0f || !isinf(arr[1]) || arr[2] != 0.0f) failures++, printf("FAIL wf_to_fp16 array\n");
}

static int reference(FILE *in) {
    unsigned f, h, b;
    int n = 0;
    while (fscanf(in, "%x %x %x", &f, &h, &b) == 3) {
        float x = from_bits(f);
        fp16(x, (uint16_t)h);
        bf16(x, (uint16_t)b);
        n++;
    }
    return n;
}

int main(int argc, char **argv) {
    hand_values();
    if (argc > 1 && strcmp(argv[1], "-") == 0) {
        int n = reference(stdin);
        printf("%d reference values\n", n);
        if (n < 1000) failures++, printf("FAIL too few reference values\n");
    }
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
