/* mesh.c: the device mesh as data (weft/mesh.h), one copy for the compiler
 * and the runtime: the order parser, rank <-> coordinates and the group
 * builder. */
#include "weft/mesh.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    const char *id;  /* its wf_axis_kind, as C source names it */
    int max;
} axis_table[WF_AXES] = {
#define WF_AXIS_ROW(id, name, max, what) { name, "WF_AXIS_" #id, max },
    WF_MESH_AXES(WF_AXIS_ROW)
#undef WF_AXIS_ROW
};

const char *wf_axis_name(int kind) {
    return kind >= 0 && kind < WF_AXES ? axis_table[kind].name : NULL;
}

const char *wf_axis_id(int kind) {
    return kind >= 0 && kind < WF_AXES ? axis_table[kind].id : NULL;
}

int wf_axis_max(int kind) {
    return kind >= 0 && kind < WF_AXES ? axis_table[kind].max : 0;
}

static int kind_of(const char *name, size_t len) {
    for (int k = 0; k < WF_AXES; k++)
        if (strlen(axis_table[k].name) == len && strncmp(axis_table[k].name, name, len) == 0) return k;
    return -1;
}

/* "a permutation of dp, tp, pp joined by \"-\", e.g. \"tp-dp-pp\"" */
static void valid_orders(char *valid, size_t n) {
    size_t used = (size_t)snprintf(valid, n, "the axes");
    for (int k = 0; k < WF_AXES && used < n; k++)
        used += (size_t)snprintf(valid + used, n - used, "%s %s", k == 0 ? "" : k == WF_AXES - 1 ? " and" : ",",
                                 axis_table[k].name);
    if (used < n)
        snprintf(valid + used, n - used, " in any order joined by \"-\", e.g. \"%s\"; an axis of size 1 may be "
                 "left out", WF_MESH_DEFAULT_ORDER);
}

int wf_mesh_layout(const char *order, const int size[WF_AXES], wf_axis out[WF_AXES], char *problem,
                   size_t problem_n, char *valid, size_t valid_n) {
    int named[WF_AXES], n = 0, seen[WF_AXES] = { 0 };
    valid_orders(valid, valid_n);
    for (const char *d = order;; d++) {
        size_t len = strcspn(d, "-");
        int k = kind_of(d, len);
        if (len == 0) {
            snprintf(problem, problem_n, "has an empty axis name");
            return -1;
        }
        if (k < 0) {
            snprintf(problem, problem_n, "names \"%.*s\", which is not a mesh axis", len > 16 ? 16 : (int)len, d);
            return -1;
        }
        if (seen[k]) {
            snprintf(problem, problem_n, "names %s twice", axis_table[k].name);
            return -1;
        }
        seen[k] = 1;
        named[n++] = k;
        d += len;
        if (!*d) break;
    }
    for (int k = 0; k < WF_AXES; k++) {
        if (seen[k]) continue;
        if (size[k] != 1) {
            snprintf(problem, problem_n, "leaves out %s = %d", axis_table[k].name, size[k]);
            return -1;
        }
        named[n++] = k;  /* size 1: outermost, where it moves no rank */
    }
    long long stride = 1;
    for (int i = 0; i < WF_AXES; i++) {
        if (size[named[i]] < 1) {
            snprintf(problem, problem_n, "lays out %s = %d (a size is >= 1)", axis_table[named[i]].name,
                     size[named[i]]);
            return -1;
        }
        if (stride * size[named[i]] > INT_MAX) {
            snprintf(problem, problem_n, "needs more than %d ranks (at %s = %d)", INT_MAX,
                     axis_table[named[i]].name, size[named[i]]);
            return -1;
        }
        out[i] = (wf_axis){ .kind = named[i], .size = size[named[i]], .stride = (int)stride };
        stride *= size[named[i]];
    }
    problem[0] = 0;
    return 0;
}

void wf_mesh_order(const wf_axis *axes, int n, char *out, size_t out_n) {
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < n && used < out_n; i++)
        used += (size_t)snprintf(out + used, out_n - used, "%s%s", i ? "-" : "", wf_axis_name(axes[i].kind));
}

static const wf_axis *find(const wf_axis *axes, int n, int kind) {
    for (int i = 0; i < n; i++)
        if (axes[i].kind == kind) return &axes[i];
    return NULL;
}

int wf_mesh_size(const wf_axis *axes, int n, int kind) {
    const wf_axis *a = find(axes, n, kind);
    return a ? a->size : 1;
}

int wf_mesh_stride(const wf_axis *axes, int n, int kind) {
    const wf_axis *a = find(axes, n, kind);
    return a ? a->stride : 0;
}

int wf_mesh_world(const wf_axis *axes, int n) {
    int world = 1;
    for (int i = 0; i < n; i++) world *= axes[i].size;
    return world;
}

void wf_mesh_coords(const wf_axis *axes, int n, int rank, int coord[WF_AXES]) {
    for (int k = 0; k < WF_AXES; k++) coord[k] = 0;
    for (int i = 0; i < n; i++) coord[axes[i].kind] = rank / axes[i].stride % axes[i].size;
}

int wf_mesh_rank(const wf_axis *axes, int n, const int coord[WF_AXES]) {
    int rank = 0;
    for (int i = 0; i < n; i++) rank += coord[axes[i].kind] * axes[i].stride;
    return rank;
}

int wf_mesh_group(const wf_axis *axes, int n, int rank, unsigned kinds, int *members, int *index) {
    /* the free axes, fastest first: counting through their coordinates as
     * one mixed-radix number visits the members in ascending rank */
    int base = rank, count = 1, at = 0;
    for (int i = 0; i < n; i++) {
        if (!(kinds & (1u << axes[i].kind))) continue;
        int c = rank / axes[i].stride % axes[i].size;
        base -= c * axes[i].stride;
        at += c * count;
        count *= axes[i].size;
    }
    if (index) *index = at;
    if (!members) return count;
    for (int m = 0; m < count; m++) {
        int r = base, digits = m;
        for (int i = 0; i < n; i++) {
            if (!(kinds & (1u << axes[i].kind))) continue;
            r += digits % axes[i].size * axes[i].stride;
            digits /= axes[i].size;
        }
        members[m] = r;
    }
    return count;
}

int wf_mesh_check(const wf_axis *axes, int n, char *problem, size_t problem_n) {
    int seen[WF_AXES] = { 0 }, stride = 1;
    for (int i = 0; i < n; i++) {
        const wf_axis *a = &axes[i];
        if (!wf_axis_name(a->kind)) {
            snprintf(problem, problem_n, "axis %d has unknown kind %d", i, a->kind);
            return -1;
        }
        if (seen[a->kind]++) {
            snprintf(problem, problem_n, "axis %s appears twice", wf_axis_name(a->kind));
            return -1;
        }
        if (a->size < 1 || a->stride != stride) {
            snprintf(problem, problem_n, "axis %s has size %d and stride %d (expected stride %d, the product of "
                     "the sizes of the axes before it)", wf_axis_name(a->kind), a->size, a->stride, stride);
            return -1;
        }
        stride *= a->size;
    }
    problem[0] = 0;
    return 0;
}
