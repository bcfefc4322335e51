/* fuzz_safetensors.c: libFuzzer harness for the safetensors reader
 * (runtime/common/safetensors.c): open the input as a checkpoint file, then
 * read every tensor it lists at the shape it declares and every metadata key
 * a resume asks for. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_input.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_input_file("model.safetensors", data, size);
    wf_st_file *f;
    char err[256];
    if (wf_st_open(&f, path, err, sizeof err) != 0) return 0;
    static const char *const keys[] = { "step", "seed", "plan_hash", "loss_scale", "format" };
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) (void)wf_st_meta(f, keys[k]);
    int n = wf_st_count(f);
    for (int i = 0; i < n; i++) {
        const char *name = wf_st_name(f, i);
        long shape[WF_ST_MAX_NDIM];
        int ndim = wf_st_shape(f, name, shape, WF_ST_MAX_NDIM);
        if (ndim < 0 || ndim > WF_ST_MAX_NDIM) continue;
        size_t numel = 1;
        for (int d = 0; d < ndim; d++) numel *= (size_t)shape[d];
        if (numel > ((size_t)1 << 24)) continue;  /* the file has to hold them: never here */
        float *dst = malloc(numel * sizeof *dst + 1);
        if (!dst) continue;
        (void)wf_st_read(f, name, ndim, shape, dst, err, sizeof err);
        free(dst);
    }
    (void)wf_st_name(f, n);
    wf_st_close(f);
    return 0;
}
