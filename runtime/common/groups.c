/* groups.c: which ranks share a communicator.  A group of the mesh is the
 * ranks that share every coordinate but its axis's, as wf_mesh_group
 * (mesh.c) lists them from the program's axes, the same list the compiler
 * wrote into ranks.txt.  Each group becomes an MPI_Comm_split of the world by
 * a colour (the group's first member) and a key (the rank's position in the
 * member list, which is its coordinate on the axis); the NCCL communicators
 * of the CUDA backend (coll_nccl.c) are made over the same MPI groups, their
 * unique id from group rank 0. */
#include <stdlib.h>

#include "internal.h"

/* the tied group: the first and last stage of one pipeline (the tied wte) */
static unsigned group_axes(wf_group g) {
    return 1u << (g == WF_GROUP_TIED ? WF_AXIS_PP : (int)g);
}

const char *wf_group_name(wf_group g) {
    return g == WF_GROUP_TIED ? "tied" : wf_axis_name((int)g);
}

int wf_group_members(const wf_program *p, int rank, wf_group g, int *members, int *index) {
    int at = 0, n = wf_mesh_group(p->axes, p->n_axes, rank, group_axes(g), members, &at);
    if (g == WF_GROUP_TIED) {  /* of the pipeline, its two ends; none without one or off the ends */
        if (n < 2 || (at != 0 && at != n - 1)) return 0;
        if (members) members[1] = members[n - 1];
        at = at != 0, n = 2;
    }
    if (index) *index = at;
    return n;
}

void wf_group_of(const wf_program *p, int rank, wf_group g, int *color, int *key) {
    int *members = malloc(sizeof(int) * (size_t)wf_mesh_world(p->axes, p->n_axes));
    if (!members) {
        fprintf(stderr, "weft: rank %d: out of memory listing its %s group\n", rank, wf_group_name(g));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int index = 0, n = wf_group_members(p, rank, g, members, &index);
    *color = n ? members[0] : MPI_UNDEFINED;
    *key = index;
    free(members);
}

MPI_Comm wf_group_comm(const wf_ctx *c, wf_group g) {
    return c->group_comm[g];
}

void wf_groups_split(wf_ctx *c) {
    const wf_program *p = c->p;
    char problem[200];
    if (wf_mesh_check(p->axes, p->n_axes, problem, sizeof problem) != 0)
        wf_fatal(c, "wf_groups_split", WF_WHERE, "the program's mesh is not valid: %s; recompile it", problem);
    if (wf_mesh_world(p->axes, p->n_axes) != p->world || wf_mesh_size(p->axes, p->n_axes, WF_AXIS_DP) != p->dp ||
        wf_mesh_size(p->axes, p->n_axes, WF_AXIS_TP) != p->tp || wf_mesh_size(p->axes, p->n_axes, WF_AXIS_PP) != p->pp)
        wf_fatal(c, "wf_groups_split", WF_WHERE, "the program's mesh axes disagree with its dp %d x tp %d x pp %d "
                 "= %d ranks; recompile it", p->dp, p->tp, p->pp, p->world);
    int coord[WF_AXES];
    wf_mesh_coords(p->axes, p->n_axes, c->rank, coord);
    if (coord[WF_AXIS_PP] != p->stage)
        wf_fatal(c, "check_layout", WF_WHERE, "rank %d belongs to pipeline stage %d but runs the program "
                 "of stage %d; use the launch.sh weft wrote", c->rank, coord[WF_AXIS_PP], p->stage);
    /* every rank splits every group in the same order (a split is collective) */
    for (int g = 0; g < WF_GROUPS; g++) {
        int color, key;
        wf_group_of(p, c->rank, (wf_group)g, &color, &key);
        MPI_Comm *comm = &c->group_comm[g];
        WF_MPI(c, MPI_Comm_split(MPI_COMM_WORLD, color, key, comm));
        if (*comm != MPI_COMM_NULL) MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
        if (g == WF_GROUP_DP) c->dp_rank = key;
        if (g == WF_GROUP_TP) c->tp_rank = key;
        if (g == WF_GROUP_PP) c->stage = key;
    }
}
