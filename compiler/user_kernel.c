/* user_kernel.c: the list of user kernels a Program applies (user_kernel.h). */
#include <stdlib.h>
#include <string.h>

#include "user_kernel.h"

static const char *const KIND_NAMES[] = { "elementwise", "elementwise2", "rowwise" };

int user_kernel_kind(const char *name) {
    for (int i = 0; i < (int)(sizeof KIND_NAMES / sizeof *KIND_NAMES); i++)
        if (strcmp(name, KIND_NAMES[i]) == 0) return i;
    return -1;
}

const char *user_kernel_kind_name(int kind) {
    return kind >= 0 && kind < (int)(sizeof KIND_NAMES / sizeof *KIND_NAMES) ? KIND_NAMES[kind] : "?";
}

int user_kernel_add(Program *p, const char *path, const char *source, const char *kind, const char *fwd,
                    const char *bwd, int params, int line) {
    for (int i = 0; i < p->n_kernels; i++) {
        const user_kernel *k = &p->kernels[i];
        if (!strcmp(k->path, path) && !strcmp(k->fwd, fwd) && !strcmp(k->bwd, bwd) &&
            k->params == params && !strcmp(user_kernel_kind_name(k->kind), kind))
            return i;
    }
    int kk = user_kernel_kind(kind);
    if (kk < 0 || strlen(path) >= sizeof p->kernels->path || strlen(fwd) >= sizeof p->kernels->fwd ||
        strlen(bwd) >= sizeof p->kernels->bwd) {
        wf_error("internal: kernel %s (%s) as the prelude passed it", source, kind);
        return -1;
    }
    user_kernel *ks = realloc(p->kernels, (size_t)(p->n_kernels + 1) * sizeof *ks);
    if (!ks) {
        wf_error("out of memory: the kernel list");
        return -1;
    }
    p->kernels = ks;
    user_kernel *k = &ks[p->n_kernels];
    memset(k, 0, sizeof *k);
    snprintf(k->path, sizeof k->path, "%s", path);
    snprintf(k->source, sizeof k->source, "%s", source);
    snprintf(k->fwd, sizeof k->fwd, "%s", fwd);
    snprintf(k->bwd, sizeof k->bwd, "%s", bwd);
    k->kind = kk;
    k->params = params;
    k->line = line;
    return p->n_kernels++;
}

void user_kernel_free(Program *p) {
    for (int i = 0; i < p->n_kernels; i++) {
        user_kernel *k = &p->kernels[i];
        free(k->text);
        for (int j = 0; j < k->n_funcs; j++) free(k->funcs[j]);
        free(k->funcs);
    }
    free(p->kernels);
    p->kernels = NULL;
    p->n_kernels = 0;
}

/* fp32 values moved per element: forward reads x (and y) and writes out;
 * backward reads x (and y) and dout and updates dx (and dy) in place */
double user_kernel_bytes(const user_kernel *k, int backward) {
    /* rowwise: per value x and y forward; x, dy and dx read and written
     * backward (w and dw are one row per op, not per value) */
    if (k->kind == UK_ROWWISE) return 4.0 * (backward ? 4 : 2);
    int in = k->kind == UK_ELEMENTWISE2 ? 2 : 1;
    return 4.0 * (backward ? in + 1 + 2 * in : in + 1);
}
