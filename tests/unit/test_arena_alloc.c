/* test_arena_alloc: the CPU backend's arena allocator (runtime/cpu/alloc.c).
 * An arena of 2 MiB or more starts on a 2 MiB boundary and its mapping
 * carries the huge-page advice (the "hg" flag of /proc/self/smaps, set by
 * madvise(MADV_HUGEPAGE) whatever the system's THP setting); a smaller one
 * is 64-byte aligned; both hold what is written to them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

/* whether the mapping holding p has VmFlags flag (-1: no smaps to read) */
static int vm_flag(const void *p, const char *flag) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int inside = 0, found = 0;
    uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            inside = a >= lo && a < hi;
        } else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            char want[8];
            snprintf(want, sizeof want, " %s", flag);
            found = strstr(line, want) != NULL;
            break;
        }
    }
    fclose(f);
    return found;
}

int main(void) {
    size_t big = (5u << 20) + 100, small = 1000;
    float *q = wf_backend_alloc(NULL, big), *s = wf_backend_alloc(NULL, small);
    check(q != NULL && s != NULL, "allocated %zu and %zu bytes", big, small);
    if (!q || !s) return 1;
    check((uintptr_t)q % (2u << 20) == 0, "the %zu-byte arena starts on a 2 MiB boundary (%p)", big, (void *)q);
    check((uintptr_t)s % 64 == 0, "the %zu-byte arena is 64-byte aligned (%p)", small, (void *)s);
    int hg = vm_flag(q, "hg");
    if (hg < 0) printf("skip: no /proc/self/smaps\n");
    else check(hg == 1, "the %zu-byte arena's mapping is advised for huge pages (VmFlags hg)", big);
    memset(q, 0x5a, big);
    memset(s, 0xa5, small);
    unsigned char *b = (unsigned char *)q, *c = (unsigned char *)s;
    check(b[0] == 0x5a && b[big - 1] == 0x5a && c[0] == 0xa5 && c[small - 1] == 0xa5,
          "both hold what was written, to their last byte");
    free(q);
    free(s);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
