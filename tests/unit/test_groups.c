/* test_groups: the mesh as data (runtime/common/mesh.c) and the groups the
 * runtime makes communicators of (runtime/common/groups.c), the module the
 * compiler lays ranks out with and the runtime builds its MPI groups and the
 * CUDA backend's NCCL communicators from.
 *
 * For every mesh tried and every order of its axes (each permutation of the
 * axis table, and orders that leave out axes of size 1):
 *   - the layout's strides are the running product of the sizes in the
 *     order named, the first axis fastest, axes left out outermost;
 *   - rank -> coordinates -> rank is the identity, and coordinates are the
 *     definition (r / stride) % size, so each coordinate tuple is one rank;
 *   - a group over any set of axes holds exactly the ranks equal to the rank
 *     on every other axis (checked against all ranks), ascending, with the
 *     rank's index its coordinate for a one-axis group;
 *   - the runtime's MPI colour and key put two ranks in one communicator
 *     exactly when only the group's coordinate differs, key = coordinate (so
 *     group rank 0, the one that makes NCCL's unique id, has coordinate 0);
 *     the tied group pairs the first and last stage of one pipeline only.
 * Then fixed examples worked by hand (a symmetric mistake in both the code
 * and the brute force above would pass those checks), and every order error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int failures, checks;

static void expect(int ok, const char *what, const char *mesh) {
    checks++;
    if (!ok) {
        failures++;
        printf("FAIL %s: %s\n", mesh, what);
    }
}

static int product(const int size[WF_AXES]) {
    int n = 1;
    for (int k = 0; k < WF_AXES; k++) n *= size[k];
    return n;
}

/* a = (r / stride) % size on every axis, by the definition, not the module */
static void coords_by_definition(const wf_axis *ax, int r, int c[WF_AXES]) {
    for (int i = 0; i < WF_AXES; i++) c[ax[i].kind] = r / ax[i].stride % ax[i].size;
}

static void check_groups(const wf_axis *ax, int world, unsigned kinds, const char *mesh) {
    int *members = malloc(sizeof(int) * (size_t)world);
    for (int r = 0; r < world; r++) {
        int index = -1, n = wf_mesh_group(ax, WF_AXES, r, kinds, members, &index), cr[WF_AXES];
        int expected = 1, at = 0, in_order = 1, count_only = wf_mesh_group(ax, WF_AXES, r, kinds, NULL, NULL);
        for (int i = 0; i < WF_AXES; i++)
            if (kinds & (1u << ax[i].kind)) expected *= ax[i].size;
        expect(n == expected && count_only == n, "group size is the product of its axes' sizes", mesh);
        coords_by_definition(ax, r, cr);
        for (int b = 0; b < world; b++) {
            int cb[WF_AXES], same = 1;
            coords_by_definition(ax, b, cb);
            for (int k = 0; k < WF_AXES; k++)
                if (!(kinds & (1u << k)) && cb[k] != cr[k]) same = 0;
            int listed = at < n && members[at] == b;
            expect(listed == same, "members: exactly the ranks equal on every other axis, ascending", mesh);
            at += listed;
        }
        for (int m = 1; m < n; m++) in_order &= members[m - 1] < members[m];
        expect(in_order && index >= 0 && index < n && members[index] == r, "index is the rank's position", mesh);
        for (int k = 0; k < WF_AXES; k++)
            if (kinds == 1u << k) expect(index == cr[k], "one axis: index is the rank's coordinate", mesh);
    }
    free(members);
}

/* The runtime's groups (groups.c) over a program carrying the layout. */
static void check_runtime_groups(const wf_axis *ax, const int size[WF_AXES], const char *mesh) {
    wf_program p;
    memset(&p, 0, sizeof p);
    p.dp = size[WF_AXIS_DP], p.tp = size[WF_AXIS_TP], p.pp = size[WF_AXIS_PP];
    p.world = product(size);
    p.axes = ax, p.n_axes = WF_AXES;
    char problem[200];
    expect(wf_mesh_check(ax, WF_AXES, problem, sizeof problem) == 0, "wf_mesh_check accepts the layout", mesh);
    for (int a = 0; a < p.world; a++) {
        int ca[WF_AXES];
        coords_by_definition(ax, a, ca);
        for (int k = 0; k < WF_AXES; k++) {
            int color_a, key_a;
            wf_group_of(&p, a, (wf_group)k, &color_a, &key_a);
            expect(key_a == ca[k], "group rank is the group's own coordinate", mesh);
            for (int b = 0; b < p.world; b++) {
                int cb[WF_AXES], color_b, key_b, others_equal = 1;
                coords_by_definition(ax, b, cb);
                wf_group_of(&p, b, (wf_group)k, &color_b, &key_b);
                for (int j = 0; j < WF_AXES; j++)
                    if (j != k && ca[j] != cb[j]) others_equal = 0;
                expect((color_a == color_b) == others_equal,
                       "same communicator exactly when only the group's coordinate differs", mesh);
            }
        }
        int color, key, pp = size[WF_AXIS_PP], end = pp > 1 && (ca[WF_AXIS_PP] == 0 || ca[WF_AXIS_PP] == pp - 1);
        wf_group_of(&p, a, WF_GROUP_TIED, &color, &key);
        expect((color != MPI_UNDEFINED) == end, "tied group: first and last stage only", mesh);
        if (!end) continue;
        expect(key == (ca[WF_AXIS_PP] != 0), "tied group: the first stage is its rank 0", mesh);
        for (int b = 0; b < p.world; b++) {
            int cb[WF_AXES], color_b, key_b, partner = 1;
            coords_by_definition(ax, b, cb);
            wf_group_of(&p, b, WF_GROUP_TIED, &color_b, &key_b);
            for (int j = 0; j < WF_AXES; j++)
                if (j != WF_AXIS_PP && cb[j] != ca[j]) partner = 0;
            partner &= cb[WF_AXIS_PP] == 0 || cb[WF_AXIS_PP] == pp - 1;
            expect((color_b == color) == partner, "tied group: the two ends of one pipeline", mesh);
        }
    }
}

/* One mesh under one order: named[] the axes the order names, fastest first. */
static void check_order(const int size[WF_AXES], const int *named, int n_named) {
    char order[64] = "", mesh[160], problem[160], valid[200];
    for (int i = 0; i < n_named; i++)
        snprintf(order + strlen(order), sizeof order - strlen(order), "%s%s", i ? "-" : "", wf_axis_name(named[i]));
    int used = snprintf(mesh, sizeof mesh, "order \"%s\",", order);
    for (int k = 0; k < WF_AXES; k++) used += snprintf(mesh + used, sizeof mesh - (size_t)used, " %s %d",
                                                       wf_axis_name(k), size[k]);
    int before = failures, world = product(size);
    wf_axis ax[WF_AXES];
    if (wf_mesh_layout(order, size, ax, problem, sizeof problem, valid, sizeof valid) != 0) {
        expect(0, problem, mesh);
        return;
    }
    /* strides: the running product in the order named, then the axes left out */
    int stride = 1, left_out = 0;
    for (int i = 0; i < WF_AXES; i++) {
        int want_kind = i < n_named ? named[i] : -1;
        if (i >= n_named) {
            expect(size[ax[i].kind] == 1, "only axes of size 1 are left out", mesh);
            for (int j = 0; j < n_named; j++) expect(named[j] != ax[i].kind, "a left-out axis is not named", mesh);
            left_out++;
        } else {
            expect(ax[i].kind == want_kind, "axes in the order named", mesh);
        }
        expect(ax[i].size == size[ax[i].kind] && ax[i].stride == stride, "stride = product of the faster sizes", mesh);
        stride *= ax[i].size;
    }
    expect(left_out == WF_AXES - n_named && wf_mesh_world(ax, WF_AXES) == world, "every axis laid out", mesh);
    /* rank <-> coordinates: a bijection, and the definition */
    char *hit = calloc((size_t)world, 1);
    for (int r = 0; r < world; r++) {
        int c[WF_AXES], d[WF_AXES];
        wf_mesh_coords(ax, WF_AXES, r, c);
        coords_by_definition(ax, r, d);
        expect(memcmp(c, d, sizeof c) == 0, "coordinates are (r / stride) % size", mesh);
        expect(wf_mesh_rank(ax, WF_AXES, c) == r, "rank(coords(r)) == r", mesh);
        int flat = 0;  /* the tuple as a number in table order: distinct tuples, distinct numbers */
        for (int k = 0; k < WF_AXES; k++) flat = flat * size[k] + c[k];
        expect(flat >= 0 && flat < world && !hit[flat], "each coordinate tuple is one rank", mesh);
        if (flat >= 0 && flat < world) hit[flat] = 1;
    }
    free(hit);
    /* groups over every set of axes, and the runtime's communicators */
    for (unsigned kinds = 0; kinds < 1u << WF_AXES; kinds++) check_groups(ax, world, kinds, mesh);
    check_runtime_groups(ax, size, mesh);
    char text[64];
    wf_mesh_order(ax, WF_AXES, text, sizeof text);
    expect(strncmp(text, order, strlen(order)) == 0, "wf_mesh_order writes the order back", mesh);
    if (failures == before) printf("ok   %s\n", mesh);
}

/* Every permutation of the axis table (Heap's algorithm) and, where axes
 * have size 1, the orders without them. */
static void permute(const int size[WF_AXES], int *kinds, int n) {
    if (n == 1) {
        check_order(size, kinds, WF_AXES);
        int named[WF_AXES], m = 0;  /* the same order without its size-1 axes */
        for (int i = 0; i < WF_AXES; i++)
            if (size[kinds[i]] > 1) named[m++] = kinds[i];
        if (m < WF_AXES && m > 0) check_order(size, named, m);
        return;
    }
    for (int i = 0; i < n; i++) {
        permute(size, kinds, n - 1);
        int j = n % 2 ? 0 : i, t = kinds[j];
        kinds[j] = kinds[n - 1];
        kinds[n - 1] = t;
    }
}

static void expect_error(const char *order, int dp, int tp, int pp, const char *problem_want) {
    int size[WF_AXES];
    for (int k = 0; k < WF_AXES; k++) size[k] = 1;
    size[WF_AXIS_DP] = dp, size[WF_AXIS_TP] = tp, size[WF_AXIS_PP] = pp;
    wf_axis ax[WF_AXES];
    char problem[160], valid[200], what[640];
    int rc = wf_mesh_layout(order, size, ax, problem, sizeof problem, valid, sizeof valid);
    snprintf(what, sizeof what, "order \"%s\" says \"%s\" (got \"%s\"; valid: %s)", order, problem_want,
             rc ? problem : "no error", valid);
    expect(rc == -1 && strcmp(problem, problem_want) == 0, what, "errors");
    expect(strstr(valid, "dp") && strstr(valid, "tp") && strstr(valid, "pp") && strstr(valid, WF_MESH_DEFAULT_ORDER),
           "the valid text names every axis and the default order", "errors");
}

/* A hand-worked mesh: dp 2 x tp 2 x pp 2. */
static void check_example(const char *order, int rank, const int want_coord[3], const int want_dp[2],
                          const int want_tp[2], const int want_pp[2], int pp_stride) {
    int size[WF_AXES], c[WF_AXES], m[8], index;
    for (int k = 0; k < WF_AXES; k++) size[k] = 1;
    size[WF_AXIS_DP] = size[WF_AXIS_TP] = size[WF_AXIS_PP] = 2;
    wf_axis ax[WF_AXES];
    char problem[160], valid[200], what[96];
    snprintf(what, sizeof what, "%s, rank %d", order, rank);
    expect(wf_mesh_layout(order, size, ax, problem, sizeof problem, valid, sizeof valid) == 0, "lays out", what);
    wf_mesh_coords(ax, WF_AXES, rank, c);
    expect(c[WF_AXIS_DP] == want_coord[0] && c[WF_AXIS_TP] == want_coord[1] && c[WF_AXIS_PP] == want_coord[2],
           "coordinates (dp, tp, pp)", what);
    wf_mesh_group(ax, WF_AXES, rank, 1u << WF_AXIS_DP, m, &index);
    expect(m[0] == want_dp[0] && m[1] == want_dp[1], "dp group", what);
    wf_mesh_group(ax, WF_AXES, rank, 1u << WF_AXIS_TP, m, &index);
    expect(m[0] == want_tp[0] && m[1] == want_tp[1], "tp group", what);
    wf_mesh_group(ax, WF_AXES, rank, 1u << WF_AXIS_PP, m, &index);
    expect(m[0] == want_pp[0] && m[1] == want_pp[1], "pp group", what);
    expect(wf_mesh_stride(ax, WF_AXES, WF_AXIS_PP) == pp_stride, "pp stride", what);
}

int main(void) {
    expect(WF_AXES == 3 && strcmp(wf_axis_name(WF_AXIS_DP), "dp") == 0 && strcmp(wf_axis_name(WF_AXIS_TP), "tp") == 0
           && strcmp(wf_axis_name(WF_AXIS_PP), "pp") == 0 && !wf_axis_name(WF_AXES),
           "the axis table: dp, tp, pp (update this test with a new axis)", "table");
    expect((int)WF_GROUP_DP == WF_AXIS_DP && (int)WF_GROUP_TP == WF_AXIS_TP && (int)WF_GROUP_PP == WF_AXIS_PP
           && (int)WF_GROUP_TIED == WF_AXES, "one runtime group per axis, then the tied pair", "table");
    const int meshes[][3] = { /* dp, tp, pp */
        { 1, 1, 1 }, { 2, 1, 1 }, { 1, 2, 1 }, { 1, 1, 2 }, { 2, 2, 2 }, { 4, 2, 1 }, { 2, 1, 4 }, { 3, 2, 3 } };
    for (size_t i = 0; i < sizeof meshes / sizeof meshes[0]; i++) {
        int size[WF_AXES], kinds[WF_AXES];
        for (int k = 0; k < WF_AXES; k++) size[k] = 1;  /* an axis the meshes below omit */
        size[WF_AXIS_DP] = meshes[i][0], size[WF_AXIS_TP] = meshes[i][1], size[WF_AXIS_PP] = meshes[i][2];
        for (int k = 0; k < WF_AXES; k++) kinds[k] = k;
        permute(size, kinds, WF_AXES);
    }

    /* worked by hand.  tp-dp-pp: rank = tp + 2 dp + 4 pp, so 5 = tp 1, dp 0, pp 1 */
    check_example("tp-dp-pp", 5, (const int[]){ 0, 1, 1 }, (const int[]){ 5, 7 }, (const int[]){ 4, 5 },
                  (const int[]){ 1, 5 }, 4);
    /* dp-tp-pp: rank = dp + 2 tp + 4 pp, so 5 = dp 1, tp 0, pp 1 */
    check_example("dp-tp-pp", 5, (const int[]){ 1, 0, 1 }, (const int[]){ 4, 5 }, (const int[]){ 5, 7 },
                  (const int[]){ 1, 5 }, 4);
    /* pp-dp-tp: rank = pp + 2 dp + 4 tp, so 6 = pp 0, dp 1, tp 1 */
    check_example("pp-dp-tp", 6, (const int[]){ 1, 1, 0 }, (const int[]){ 4, 6 }, (const int[]){ 2, 6 },
                  (const int[]){ 6, 7 }, 1);
    {   /* a group over two axes: tp-dp-pp, rank 5's dp x tp group is stage 1 */
        int size[WF_AXES], m[8], index;
        for (int k = 0; k < WF_AXES; k++) size[k] = 2;
        wf_axis ax[WF_AXES];
        char problem[160], valid[200];
        wf_mesh_layout("tp-dp-pp", size, ax, problem, sizeof problem, valid, sizeof valid);
        int n = wf_mesh_group(ax, WF_AXES, 5, 1u << WF_AXIS_DP | 1u << WF_AXIS_TP, m, &index);
        expect(n == 4 && m[0] == 4 && m[1] == 5 && m[2] == 6 && m[3] == 7 && index == 1, "dp x tp group of rank 5",
               "tp-dp-pp");
        /* wf_mesh_check refuses what does not lay out the world once */
        ax[1].stride = 3;
        expect(wf_mesh_check(ax, WF_AXES, problem, sizeof problem) == -1, "a wrong stride is refused", "check");
        ax[1].stride = 2, ax[1].kind = ax[0].kind;
        expect(wf_mesh_check(ax, WF_AXES, problem, sizeof problem) == -1, "an axis twice is refused", "check");
    }

    expect_error("tp-tp-pp", 1, 2, 1, "names tp twice");
    expect_error("tp-xp-pp", 1, 1, 1, "names \"xp\", which is not a mesh axis");
    expect_error("TP-dp-pp", 1, 1, 1, "names \"TP\", which is not a mesh axis");
    expect_error("tp-dp", 2, 2, 2, "leaves out pp = 2");
    expect_error("pp", 1, 4, 2, "leaves out tp = 4");
    expect_error("", 1, 1, 1, "has an empty axis name");
    expect_error("tp--dp-pp", 1, 1, 1, "has an empty axis name");
    expect_error("tp-dp-pp-", 1, 1, 1, "has an empty axis name");
    expect_error("tp dp pp", 1, 1, 1, "names \"tp dp pp\", which is not a mesh axis");
    expect_error("tp-dp-pp", 65536, 1024, 1024, "needs more than 2147483647 ranks (at pp = 1024)");
    expect_error("tp-dp-pp", 0, 1, 1, "lays out dp = 0 (a size is >= 1)");

    printf("%d checks, %d failed\n", checks, failures);
    return failures != 0;
}
