/* test_round16_emu.cc: runtime/cuda/round16.cuh (the device's bf16 / fp16
 * rounding, used inside the fused residual + layernorm) run by the CPU
 * emulator against runtime/cpu/precision.c, bit for bit, on values chosen to
 * hit every branch: ties (to even), carries into the exponent, fp16's
 * largest finite value and overflow to inf, its subnormals and underflow to
 * zero, signed zeros, inf and NaN, plus random bit patterns. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda_rt.h"
#include "round16.cuh"

__global__ static void round_kernel(float *out, const float *in, int n, int precision) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = wf_dev_stored(precision, in[i]);
}

static float from_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static uint32_t bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

enum { N_RANDOM = 20000, N_MAX = N_RANDOM + 64 };

int main(void) {
    static float in[N_MAX], out[N_MAX];
    int n = 0;
    const float fixed[] = {
        0.0f, -0.0f, 1.0f, -1.0f, 1.00390625f /* bf16 tie */, 1.01171875f, 65504.0f, 65519.0f, 65520.0f,
        -65520.0f, 70000.0f, 6.103515625e-05f /* 2^-14 */, 6.0e-05f, 5.9604644775390625e-08f /* 2^-24 */,
        2.98023223876953125e-08f /* 2^-25: tie to 0 */, 2.99e-08f, 8.940696716308594e-08f /* 1.5 * 2^-24 */,
        1e-10f, 3.4e38f, -3.4e38f, INFINITY, -INFINITY, NAN, 1.0009765625f /* fp16 1 + 2^-10 */,
        1.00048828125f /* fp16 tie */, 1.00146484375f, 2047.5f, 2048.5f, 0.333333343f, -123.456f,
        from_bits(0x3f7fffffu) /* carries into the exponent */, from_bits(0x477fefffu), from_bits(0x387fffffu),
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) in[n++] = fixed[i];
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < N_RANDOM; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t u = (uint32_t)(rng >> 32);
        if (i % 2) u = (u & 0x87ffffffu) | 0x30000000u;  /* half of them near fp16's range */
        in[n++] = from_bits(u);
    }
    int bad = 0;
    for (int precision = WF_BF16; precision <= WF_FP16; precision++) {
        WF_LAUNCH(round_kernel, 16, 128, 0, wf_cuda_stream(NULL))(out, in, n, precision);
        wf_cuda_sync(NULL, "round_kernel");
        int wrong = 0;
        for (int i = 0; i < n; i++) {
            float want = precision == WF_BF16 ? wf_bf16(in[i]) : wf_fp16(in[i]);
            int ok = isnan(want) ? isnan(out[i]) : bits(want) == bits(out[i]);
            if (!ok && wrong++ < 3)
                printf("  %s(%a = 0x%08x): device %a, host %a\n", precision == WF_BF16 ? "bf16" : "fp16", in[i],
                       bits(in[i]), out[i], want);
        }
        printf("%s device rounding == host rounding on %d values: %s\n", precision == WF_BF16 ? "bf16" : "fp16", n,
               wrong ? "FAIL" : "ok");
        bad += wrong != 0;
    }
    return bad ? 1 : 0;
}
