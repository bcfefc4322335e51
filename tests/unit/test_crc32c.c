/* test_crc32c.c: CRC-32C (runtime/common/crc32c.c) against the published
 * check values (RFC 3720 B.4 and the "123456789" check), and the hardware
 * path against the portable table on random buffers, lengths, alignments
 * and continued checksums. */
#include "crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_pass, n_fail;

static void check(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
    ok ? n_pass++ : n_fail++;
}

int main(void)
{
    unsigned char zeros[32] = { 0 }, ones[32], up[32], down[32];
    for (int i = 0; i < 32; i++) {
        ones[i] = 0xff;
        up[i] = (unsigned char)i;
        down[i] = (unsigned char)(31 - i);
    }
    check(wf_crc32c(0, "123456789", 9) == 0xE3069283u, "\"123456789\" -> e3069283");
    check(wf_crc32c_portable(0, "123456789", 9) == 0xE3069283u, "portable: \"123456789\" -> e3069283");
    check(wf_crc32c(0, zeros, 32) == 0x8A9136AAu, "RFC 3720: 32 zero bytes -> 8a9136aa");
    check(wf_crc32c(0, ones, 32) == 0x62A8AB43u, "RFC 3720: 32 0xff bytes -> 62a8ab43");
    check(wf_crc32c(0, up, 32) == 0x46DD794Eu, "RFC 3720: 0..31 -> 46dd794e");
    check(wf_crc32c(0, down, 32) == 0x113FDB5Cu, "RFC 3720: 31..0 -> 113fdb5c");
    check(wf_crc32c(0, "", 0) == 0, "empty -> 0");

    enum { N = 1 << 16 };
    unsigned char *b = malloc(N);
    srand(7);
    for (int i = 0; i < N; i++)
        b[i] = (unsigned char)rand();
    int same = 1, cont = 1;
    for (int t = 0; t < 500; t++) {
        size_t off = (size_t)rand() % 64, len = (size_t)rand() % (N - 64);
        uint32_t seed = (uint32_t)rand();
        same &= wf_crc32c(seed, b + off, len) == wf_crc32c_portable(seed, b + off, len);
        size_t cut = len ? (size_t)rand() % len : 0;
        cont &= wf_crc32c(wf_crc32c(0, b + off, cut), b + off + cut, len - cut) ==
                wf_crc32c(0, b + off, len);
    }
    check(same, "500 random buffers: the fast path equals the table");
    check(cont, "500 random splits: crc(crc(a), b) == crc(a b)");
    int comb = 1;
    for (int t = 0; t < 500; t++) {
        size_t len = (size_t)rand() % N, cut = len ? (size_t)rand() % (len + 1) : 0;
        comb &= wf_crc32c_combine(wf_crc32c(0, b, cut), wf_crc32c(0, b + cut, len - cut), len - cut) ==
                wf_crc32c(0, b, len);
    }
    check(comb, "500 random splits: combine(crc(a), crc(b), |b|) == crc(a b)");
    check(wf_crc32c_combine(wf_crc32c(0, "1234", 4), wf_crc32c(0, "56789", 5), 5) == 0xE3069283u,
          "combine(\"1234\", \"56789\") -> e3069283");
    check(wf_crc32c_combine(0xE3069283u, 0, 0) == 0xE3069283u, "combine with an empty b keeps a's");
    b[100] ^= 1;
    uint32_t flipped = wf_crc32c(0, b, N);
    b[100] ^= 1;
    check(flipped != wf_crc32c(0, b, N), "one flipped bit changes the checksum");
    free(b);
    printf("test_crc32c: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
