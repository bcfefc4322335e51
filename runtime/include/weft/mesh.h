/* weft/mesh.h: the device mesh as data.
 *
 * A mesh is an ordered list of axes, each (kind, size, stride), the first the
 * fastest: rank r's coordinate on an axis is (r / stride) % size, and a rank
 * is the sum of coordinate * stride.  mesh.order ("tp-dp-pp") names the
 * order.  The compiler and the runtime share this module (runtime/common/
 * mesh.c): the compiler lays the ranks out with it and writes the axes into
 * every generated program, and the runtime builds its communicators from
 * those axes with the same group builder, so the two cannot disagree. */
#ifndef WEFT_MESH_H
#define WEFT_MESH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The axes weft knows, one row each: X(ID, name, largest size, what it
 * splits).  The row order is the order of wf_axis_kind (and of the runtime's
 * groups, coll.h); the rank order is mesh.order's, not this one. */
#define WF_MESH_AXES(X)                                       \
    X(DP, "dp", 65536, "data parallel: the batch")            \
    X(TP, "tp", 1024, "tensor parallel: heads and features") \
    X(PP, "pp", 1024, "pipeline parallel: the layers")

typedef enum {
#define WF_AXIS_ENUM(id, name, max, what) WF_AXIS_##id,
    WF_MESH_AXES(WF_AXIS_ENUM)
#undef WF_AXIS_ENUM
    WF_AXES  /* how many */
} wf_axis_kind;

/* Megatron's numbering: tp fastest (inside a node), then dp, then pp. */
#define WF_MESH_DEFAULT_ORDER "tp-dp-pp"

typedef struct wf_axis {
    int kind;    /* wf_axis_kind */
    int size;    /* ranks along the axis */
    int stride;  /* rank distance between neighbours along it */
} wf_axis;

const char *wf_axis_name(int kind);  /* "dp"; NULL outside the table */
const char *wf_axis_id(int kind);    /* "WF_AXIS_DP", for generated code */
int wf_axis_max(int kind);           /* the largest size a plan may ask for */

/* Lays out the axes by an order string: axis names joined by "-", each at
 * most once; an axis the order leaves out must have size 1 and goes
 * outermost.  size[] is indexed by kind.  Writes all WF_AXES axes into out[],
 * fastest first, and returns 0; or returns -1 with `problem` saying what is
 * wrong with the order (a phrase to follow the quoted order, e.g. `names tp
 * twice`) and `valid` what would be valid. */
int wf_mesh_layout(const char *order, const int size[WF_AXES], wf_axis out[WF_AXES], char *problem,
                   size_t problem_n, char *valid, size_t valid_n);

/* The order text of a layout ("tp-dp-pp"), every axis named. */
void wf_mesh_order(const wf_axis *axes, int n, char *out, size_t out_n);

/* Size and stride of one kind of axis; 1 and 0 where the mesh lacks it. */
int wf_mesh_size(const wf_axis *axes, int n, int kind);
int wf_mesh_stride(const wf_axis *axes, int n, int kind);
int wf_mesh_world(const wf_axis *axes, int n);

/* rank -> coordinates (coord[] indexed by kind) and back. */
void wf_mesh_coords(const wf_axis *axes, int n, int rank, int coord[WF_AXES]);
int wf_mesh_rank(const wf_axis *axes, int n, const int coord[WF_AXES]);

/* The group of `rank` over the axes in `kinds` (a bit set, 1 << kind): the
 * ranks whose coordinates equal rank's on every other axis.  Writes them to
 * members[] (room for the product of those axes' sizes; NULL: count only) in
 * ascending order, which for one axis is the order of its coordinate, and
 * *index (if not NULL) the position of `rank` among them (its rank in the
 * group's communicator).  Returns how many there are. */
int wf_mesh_group(const wf_axis *axes, int n, int rank, unsigned kinds, int *members, int *index);

/* 0, or -1 with `problem` when axes[] is not a valid mesh: each kind once,
 * sizes >= 1, strides laying out every rank of the world exactly once. */
int wf_mesh_check(const wf_axis *axes, int n, char *problem, size_t problem_n);

#ifdef __cplusplus
}
#endif

#endif
