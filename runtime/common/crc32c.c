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
