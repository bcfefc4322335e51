/* comm_env.c: plan.comm and plan.nccl after the prelude has checked them:
 * the lines `weft check` prints, and the exports of a CUDA launch.sh.
 *
 * NCCL reads its settings from the environment when a communicator is made,
 * so the plan's settings travel as NCCL_* variables; `-x NAME` makes mpirun
 * forward each one to ranks on other nodes too (local ranks inherit it). */
#include <string.h>

#include "emit.h"
#include "escape.h"

void comm_report(const Program *p, FILE *out) {
    if (strcmp(p->comm, "mpi") == 0) {
        fprintf(out, "comm      mpi: collectives staged through host memory (--backend cuda; "
                     "ranks may share a GPU)\n");
        return;
    }
    if (p->n_nccl_env == 0) return;  /* the defaults: nothing to say */
    fprintf(out, "comm      nccl with %d setting(s), exported by a --backend cuda launch.sh:\n",
            p->n_nccl_env);
    for (int i = 0; i < p->n_nccl_env; i++) fprintf(out, "  %s\n", p->nccl_env[i]);
}

void emit_comm_env(writer *o, const Program *p) {
    if (strcmp(p->comm, "mpi") == 0) {
        emit(o, "# comm = \"mpi\": collectives go through host memory by MPI, so ranks may\n"
                "# share a GPU (a node's k-th rank uses device k mod its device count).\n");
        return;
    }
    if (p->n_nccl_env == 0) return;
    emit(o, "# NCCL settings from the plan (plan.nccl), read when NCCL sets up.\n");
    for (int i = 0; i < p->n_nccl_env; i++) {
        const char *eq = strchr(p->nccl_env[i], '=');
        if (!eq) continue;
        /* the prelude allows only letters, digits and , . : _ - ^ = in values;
         * quoted for the shell all the same (escape.h) */
        char word[4 * sizeof p->nccl_env[i] + 3];
        if (wf_escape_sh(eq + 1, word, sizeof word) < 0) {
            o->failed = 1;
            continue;
        }
        emit(o, "export %.*s=%s\n", (int)(eq - p->nccl_env[i]), p->nccl_env[i], word);
    }
    emit(o, "flags=\"$flags");
    for (int i = 0; i < p->n_nccl_env; i++) {
        const char *eq = strchr(p->nccl_env[i], '=');
        if (eq) emit(o, " -x %.*s", (int)(eq - p->nccl_env[i]), p->nccl_env[i]);
    }
    emit(o, "\"\n");
}
