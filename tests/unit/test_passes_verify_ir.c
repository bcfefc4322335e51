/* test_passes_verify_ir.c: compiler/verify_ir.c accepts what the passes make
 * (every plan of the pipeline runs it; here tp 2 x pp 2 with sequence
 * parallelism) and rejects each broken invariant by name: one hand-made
 * break at a time, undone before the next. */
#include <stdlib.h>
#include <unistd.h>

#include "passes_fixture.h"
#include "verify_ir.h"

/* verify_ir's verdict, with what it reported on stderr in msg. */
static int verdict(const Program *p, char *msg, size_t n) {
    fflush(stderr);
    int saved = dup(2);
    FILE *t = tmpfile();
    dup2(fileno(t), 2);
    int rc = verify_ir(p, "test");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(t);
    size_t got = fread(msg, 1, n - 1, t);
    msg[got] = 0;
    fclose(t);
    return rc;
}

static void rejects(const Program *p, const char *what, const char *want) {
    char msg[1024];
    int rc = verdict(p, msg, sizeof msg);
    check(rc != 0 && strstr(msg, want) && strstr(msg, "after pass 'test'"), "%s: rejected, saying \"%s\"%s%s", what,
          want, rc != 0 ? "" : " (accepted)", rc != 0 && !strstr(msg, want) ? msg : "");
}

static int op_of(const Program *p, op_kind k, int nth) {
    for (int i = 0; i < p->n_ops; i++)
        if (p->ops[i].kind == k && nth-- == 0) return i;
    return -1;
}

int main(void) {
    Program p;
    char msg[1024];
    check(compile_with(&p, "plans/tiny.lua", "cpu", "mesh.dp=1", "mesh.tp=2", "mesh.pp=2", "mesh.sp=true",
                       "batch.micro=2", NULL) == 0, "tiny tp 2 x pp 2 sp compiles (verify_ir ran after shard, "
                       "partition, graph)");
    check(verdict(&p, msg, sizeof msg) == 0 && !msg[0], "the compiled IR verifies, silently");

    int ln = op_of(&p, OP_LAYERNORM, 1), gelu = op_of(&p, OP_GELU, 0), lin = op_of(&p, OP_LINEAR, 0);
    int save = p.ops[ln].in[0];
    p.ops[ln].in[0] = p.ops[ln + 2].out;
    rejects(&p, "an op reading a later op's output", "before op");
    p.ops[ln].in[0] = p.n_tensors;
    rejects(&p, "a tensor id out of range", "reads tensor");
    p.ops[ln].in[0] = save;

    int t = p.ops[gelu].out;
    save = p.tensors[t].producer;
    p.tensors[t].producer = gelu + 1;
    rejects(&p, "a tensor claiming the wrong producer", "claims op");
    p.tensors[t].producer = save;

    save = p.ops[ln].param[1];
    p.ops[ln].param[1] = p.n_params;
    rejects(&p, "a parameter id out of range", "uses parameter");
    p.ops[ln].param[1] = p.ops[ln].param[0];  /* the bias now unused */
    rejects(&p, "a parameter no op uses", "used by no op");
    p.ops[ln].param[1] = save;

    p.tensors[t].width *= 2;
    rejects(&p, "a gelu that changes width", "turns");
    p.tensors[t].width /= 2;
    p.tensors[t].rows_div = p.tensors[t].rows_div == 1 ? 2 : 1;
    rejects(&p, "a gelu that changes rows", "turns");
    p.tensors[t].rows_div = p.tensors[p.ops[gelu].in[0]].rows_div;

    ir_param *w = &p.params[p.ops[lin].param[0]];
    w->numel++;
    rejects(&p, "a parameter whose numel is not its shape's", "elements");
    w->numel--;
    w->shape[1] *= 2, w->numel *= 2;
    rejects(&p, "a linear whose weight does not match its tensors", "linear");
    w->shape[1] /= 2, w->numel /= 2;

    int last = p.n_ops - 1;
    p.ops[last].chunk = 0;
    rejects(&p, "an op of chunk 0 after chunk 1's", "not contiguous");
    p.ops[last].chunk = p.n_chunks;
    rejects(&p, "a chunk out of range", "in chunk");
    p.ops[last].chunk = p.n_chunks - 1;

    int add = -1;
    for (int i = 0; i < p.n_ops && add < 0; i++)
        if (p.ops[i].fused == FUSED_ADD_LN_ADD) add = i;
    p.ops[add + 1].fused = FUSED_NONE;
    rejects(&p, "half a residual_layernorm pair", "fused pair");
    p.ops[add + 1].fused = FUSED_ADD_LN_NORM;
    p.ops[gelu + 1].dgelu = DGELU_NONE;
    rejects(&p, "half a linear_dgelu pair", "backward pair");
    p.ops[gelu + 1].dgelu = DGELU_LINEAR;

    check(verdict(&p, msg, sizeof msg) == 0, "undone, it verifies again");
    program_free(&p);
    return summary();
}
