/* test_groups: which ranks share a communicator (runtime/common/groups.c),
 * the table both the MPI groups and the CUDA backend's NCCL communicators are
 * made from.  For every mesh and mesh.order tried, ranks are placed by the
 * strides (rank = tp*s_tp + dp*s_dp + pp*s_pp, the forward map), and each
 * group must hold exactly the ranks that differ from each other in its own
 * coordinate, with group rank (key) = that coordinate, so group rank 0, the
 * one that makes NCCL's unique id, is the coordinate-0 rank; the tied group
 * pairs the first and last stage of one (dp, tp) and nothing else. */
#include <stdio.h>
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

/* order: the coordinates innermost first, e.g. "tp dp pp" (the default) */
static void check_mesh(int dp, int tp, int pp, const char *order) {
    wf_program p;
    memset(&p, 0, sizeof p);
    p.dp = dp, p.tp = tp, p.pp = pp;
    int size[3] = { tp, dp, pp }, stride[3] = { 0, 0, 0 }, s = 1;  /* [0] tp, [1] dp, [2] pp */
    char names[3][3];
    sscanf(order, "%2s %2s %2s", names[0], names[1], names[2]);
    for (int i = 0; i < 3; i++) {
        int which = strcmp(names[i], "tp") == 0 ? 0 : strcmp(names[i], "dp") == 0 ? 1 : 2;
        stride[which] = s;
        s *= size[which];
    }
    p.stride_tp = stride[0], p.stride_dp = stride[1], p.stride_pp = stride[2];
    char mesh[96];
    snprintf(mesh, sizeof mesh, "dp %d tp %d pp %d, order %s", dp, tp, pp, order);
    int world = dp * tp * pp, before = failures;
    const wf_group kinds[3] = { WF_GROUP_TP, WF_GROUP_DP, WF_GROUP_PP };  /* indexed like size[] */
    for (int a = 0; a < world; a++) {
        int ca[3] = { (a / stride[0]) % tp, (a / stride[1]) % dp, (a / stride[2]) % pp };
        for (int k = 0; k < 3; k++) {
            int color_a, key_a;
            wf_group_of(&p, a, kinds[k], &color_a, &key_a);
            expect(key_a == ca[k], "group rank is the group's own coordinate", mesh);
            for (int b = 0; b < world; b++) {
                int cb[3] = { (b / stride[0]) % tp, (b / stride[1]) % dp, (b / stride[2]) % pp };
                int color_b, key_b;
                wf_group_of(&p, b, kinds[k], &color_b, &key_b);
                int others_equal = 1;
                for (int j = 0; j < 3; j++)
                    if (j != k && ca[j] != cb[j]) others_equal = 0;
                expect((color_a == color_b) == others_equal,
                       "same group exactly when only the group's coordinate differs", mesh);
            }
        }
        int color, key;
        wf_group_of(&p, a, WF_GROUP_TIED, &color, &key);
        int end = pp > 1 && (ca[2] == 0 || ca[2] == pp - 1);
        expect((color != MPI_UNDEFINED) == end, "tied group: first and last stage only", mesh);
        if (!end) continue;
        for (int b = 0; b < world; b++) {
            int cb[3] = { (b / stride[0]) % tp, (b / stride[1]) % dp, (b / stride[2]) % pp };
            int color_b, key_b;
            wf_group_of(&p, b, WF_GROUP_TIED, &color_b, &key_b);
            int partner = cb[0] == ca[0] && cb[1] == ca[1] && (cb[2] == 0 || cb[2] == pp - 1);
            expect((color_b == color) == partner, "tied group: the two ends of one pipeline", mesh);
        }
    }
    printf("%s %s\n", failures == before ? "ok  " : "FAIL", mesh);
}

int main(void) {
    const char *orders[] = { "tp dp pp", "tp pp dp", "dp tp pp", "pp dp tp" };
    const int meshes[][3] = { { 1, 1, 1 }, { 2, 1, 1 }, { 1, 2, 1 }, { 1, 1, 2 }, { 2, 2, 2 },
                              { 4, 2, 1 }, { 2, 1, 4 }, { 3, 2, 3 } };
    for (size_t m = 0; m < sizeof meshes / sizeof meshes[0]; m++)
        for (int o = 0; o < 4; o++) check_mesh(meshes[m][0], meshes[m][1], meshes[m][2], orders[o]);
    /* no strides given: the default order, tp innermost */
    wf_program p;
    memset(&p, 0, sizeof p);
    p.dp = 2, p.tp = 2, p.pp = 2;
    int color, key;
    wf_group_of(&p, 5, WF_GROUP_DP, &color, &key);  /* rank 5 = tp 1, dp 0, pp 1 */
    expect(key == 0 && color == 1 * 2 + 1, "default strides: rank 5 is dp 0 of the (pp 1, tp 1) group",
           "dp 2 tp 2 pp 2, no strides");
    printf("%d checks, %d failed\n", checks, failures);
    return failures != 0;
}
