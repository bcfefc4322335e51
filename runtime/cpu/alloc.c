/* alloc.c: the CPU backend's arena allocator (wf_alloc in step.c calls it). */
#include <stdlib.h>

#include "internal.h"

void *wf_backend_alloc(size_t bytes) {
    void *q = NULL;
    /* 64-byte lines: the vector kernels and MPI like aligned buffers */
    return posix_memalign(&q, 64, bytes) == 0 ? q : NULL;
}
