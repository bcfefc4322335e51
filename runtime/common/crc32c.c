/* crc32c.c: CRC-32C, with SSE4.2's crc32 instruction where the CPU has it
 * (about 20 times faster than the table). */
#include "crc32c.h"

#include <string.h>

#define POLY 0x82F63B78u  /* 0x1EDC6F41 bit-reversed */

static uint32_t table[256];
static int table_ready;

static void make_table(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t r = b;
        for (int k = 0; k < 8; k++)
            r = r & 1 ? (r >> 1) ^ POLY : r >> 1;
        table[b] = r;
    }
    table_ready = 1;  /* racing threads compute the same values */
}

uint32_t wf_crc32c_portable(uint32_t crc, const void *buf, size_t n)
{
    if (!table_ready)
        make_table();
    const unsigned char *p = buf;
    crc = ~crc;
    while (n--)
        crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* Polynomials mod POLY in the reflected order CRC-32C uses: bit 31 holds
 * x^0, bit 0 holds x^31.  a * b mod POLY: for each term x^i of a (i = 0 up),
 * add b * x^i; multiplying by x is a right shift, folding x^32 back in. */
static uint32_t mul_mod(uint32_t a, uint32_t b)
{
    uint32_t prod = 0;
    for (int i = 0; i < 32; i++) {
        if (a & (0x80000000u >> i))
            prod ^= b;
        b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
    }
    return prod;
}

/* x^(8 n) mod POLY, by squaring: n bytes of zeros appended shift a CRC by it. */
static uint32_t x_pow_8n(size_t n)
{
    uint32_t result = 0x80000000u, base = 0x80000000u >> 8;  /* x^0, x^8 */
    for (; n; n >>= 1) {
        if (n & 1)
            result = mul_mod(result, base);
        base = mul_mod(base, base);
    }
    return result;
}

/* The CRC is linear but for its pre- and post-inversion, which cancel between
 * the two parts: crc(a b) = crc(a) * x^(8 |b|) + crc(b). */
uint32_t wf_crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b)
{
    return mul_mod(crc_a, x_pow_8n(len_b)) ^ crc_b;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const void *buf,
                                                                size_t n)
{
    const unsigned char *p = buf;
    uint64_t c = ~crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);  /* the instruction reads little-endian, as x86 is */
        c = __builtin_ia32_crc32di(c, w);
    }
    uint32_t c32 = (uint32_t)c;
    while (n--)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return ~c32;
}

uint32_t wf_crc32c(uint32_t crc, const void *buf, size_t n)
{
    static int has = -1;
    if (has < 0) {
        __builtin_cpu_init();
        has = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    }
    return has ? crc32c_sse42(crc, buf, n) : wf_crc32c_portable(crc, buf, n);
}
#else
uint32_t wf_crc32c(uint32_t crc, const void *buf, size_t n)
{
    return wf_crc32c_portable(crc, buf, n);
}
#endif
