/* pass_list.c: the pass list and its driver (pass_list.h). */
#include <string.h>

#include "pass_list.h"
#include "user_kernel.h"
#include "verify_ir.h"

const wf_pass WF_PASSES[] = {
    { "check", pass_check, 0 },
    { "shard", pass_shard, 1 },          /* replaces ops, adds collectives */
    { "partition", pass_partition, 1 },  /* assigns chunks, adds tied copies */
    { "graph", pass_graph, 1 },          /* marks fused pairs */
    { "schedule", pass_schedule, 0 },
    { "buckets", pass_buckets, 0 },
    { "memory", pass_memory, 0 },
    { "zero", pass_zero, 0 },
};
const int WF_N_PASSES = sizeof WF_PASSES / sizeof *WF_PASSES;

int pass_known(const char *name) {
    if (strcmp(name, "load") == 0) return 1;
    for (int i = 0; i < WF_N_PASSES; i++)
        if (strcmp(name, WF_PASSES[i].name) == 0) return 1;
    return 0;
}

const char *pass_names(void) {
    static char names[256];
    if (!names[0]) {
        strcpy(names, "load");
        for (int i = 0; i < WF_N_PASSES; i++) {
            strncat(names, ", ", sizeof names - strlen(names) - 1);
            strncat(names, WF_PASSES[i].name, sizeof names - strlen(names) - 1);
        }
    }
    return names;
}

static void dump_after(const Program *p, const compile_options *o, const char *name) {
    if (o->dump && strcmp(o->dump, name) == 0) program_dump(p, name, o->dump_out ? o->dump_out : stdout);
}

int compile_plan(Program *p, const compile_options *o) {
    const char *name = o->backend ? o->backend : "cpu";
    const wf_backend *be = backend_find(name);
    memset(p, 0, sizeof *p);  /* program_free is safe whatever fails */
    if (!be) {
        wf_error("unknown backend '%s' (valid: %s)", name, backend_names());
        return -1;
    }
    if (pass_load(p, o->plan, o->overrides, o->n_overrides) != 0) return -1;
    if (p->n_kernels > 0 && o->no_gradcheck)
        fprintf(stderr, "weft: warning: --no-gradcheck: the gradients of %d user kernel(s) are not proved\n",
                p->n_kernels);
    else if (user_kernel_gradcheck(p) != 0)
        return -1;
    snprintf(p->backend, sizeof p->backend, "%s", be->name);  /* before any pass reads it */
    dump_after(p, o, "load");
    for (int i = 0; i < WF_N_PASSES; i++) {
        if (WF_PASSES[i].run(p) != 0) return -1;
        if (WF_PASSES[i].rewrites && verify_ir(p, WF_PASSES[i].name) != 0) return -1;
        dump_after(p, o, WF_PASSES[i].name);
    }
    return be->check ? be->check(p) : 0;
}
