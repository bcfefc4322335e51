/* peak_report.c: a host memory peak measured on every rank, logged by root
 * beside the bound `weft check` states for it (start-up, checkpoint saves).
 * Every rank calls it (a gather); over the bound is an error in the
 * accounting, said loudly.  A large job logs its rank closest to its bound
 * and any over it. */
#include <stdlib.h>

#include "internal.h"

void wf_report_peaks(wf_ctx *c, const char *label, double measured, double bound) {
    double mine[2] = { measured, bound }, *all = NULL;
    int world = c->world;
    if (wf_is_root(c)) all = wf_host_alloc(c, sizeof(double) * 2 * (size_t)world, "host memory peaks");
    WF_MPI(c, MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    int worst = 0;
    for (int r = 0; all && r < world; r++) {
        if (all[2 * r] * all[2 * worst + 1] > all[2 * worst] * all[2 * r + 1]) worst = r;
        if (world <= 16 || all[2 * r] > all[2 * r + 1])
            wf_log(c, "%s host memory peak on rank %d: %.0f bytes, bound %.0f (weft check)%s\n", label, r,
                   all[2 * r], all[2 * r + 1], all[2 * r] > all[2 * r + 1] ? ": ERROR, over the bound" : "");
    }
    if (all && world > 16)
        wf_log(c, "%s host memory peak, closest to its bound on rank %d: %.0f bytes, bound %.0f (weft check)\n",
               label, worst, all[2 * worst], all[2 * worst + 1]);
    free(all);
}
