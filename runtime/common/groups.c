/* groups.c: which ranks share a communicator.  Each group of the mesh is an
 * MPI_Comm_split of the world by a colour (the coordinates the group's ranks
 * share) and a key (the coordinate they differ in, so group rank = that
 * coordinate); train.c splits by it and the NCCL communicators of the CUDA
 * backend take the same groups, their unique id made by group rank 0. */
#include "internal.h"

void wf_group_of(const wf_program *p, int rank, wf_group g, int *color, int *key) {
    /* by mesh.order (default tp innermost, then dp, then pp) */
    int s_tp = p->stride_tp ? p->stride_tp : 1, s_dp = p->stride_dp ? p->stride_dp : p->tp;
    int s_pp = p->stride_pp ? p->stride_pp : p->tp * p->dp;
    int tp = (rank / s_tp) % p->tp, dp = (rank / s_dp) % p->dp, pp = (rank / s_pp) % p->pp;
    switch (g) {
    case WF_GROUP_DP: *color = pp * p->tp + tp; *key = dp; break;
    case WF_GROUP_TP: *color = pp * p->dp + dp; *key = tp; break;
    case WF_GROUP_PP: *color = dp * p->tp + tp; *key = pp; break;
    default:  /* the first and last stage, for the tied wte (none without a pipeline) */
        *color = (pp == 0 || pp == p->pp - 1) && p->pp > 1 ? dp * p->tp + tp : MPI_UNDEFINED;
        *key = pp;
        break;
    }
}
