/* test_passes_partition.c: the partition pass (compiler/partition.c): layers
 * per chunk (balanced, or as pipeline.stages says), ops in contiguous chunks
 * with the embedding in the first and the LM head in the last, chunk k on
 * stage k % pp, one boundary tensor between chunks, and the tied wte copied
 * onto the last stage. */
#include "passes_fixture.h"

/* The facts every partition keeps, whatever the layer counts. */
static void invariants(const Program *p, const char *what) {
    int K = p->pp * p->virt, sum = 0, bad = 0;
    for (int k = 0; k < K; k++) {
        sum += p->chunk_layers[k];
        bad += p->chunk_layers[k] < 1;
    }
    check(p->n_chunks == K && sum == p->layers && !bad, "%s: %d chunks of >= 1 layer, %d layers in all", what, K, sum);
    bad = 0;
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        if (i && o->chunk < p->ops[i - 1].chunk) bad++;
        /* block l lies in the chunk whose layer range holds it */
        if (o->layer >= 0) {
            int first = 0, k = 0;
            while (first + p->chunk_layers[k] <= o->layer) first += p->chunk_layers[k++];
            bad += o->chunk != k;
        }
    }
    check(bad == 0 && p->ops[0].chunk == 0 && p->ops[p->n_ops - 1].chunk == K - 1,
          "%s: chunks contiguous, blocks where chunk_layers puts them, embedding first, loss last", what);
    bad = 0;
    for (int k = 0; k + 1 < K; k++) bad += !p->chunk_out[k] || p->chunk_out[k] != p->chunk_in[k + 1];
    check(bad == 0 && p->chunk_in[0] == 0 && p->chunk_out[K - 1] == 0,
          "%s: one boundary tensor from each chunk into the next, none at the ends", what);
    /* a parameter lives on the stage of its ops */
    bad = 0;
    for (int i = 0; i < p->n_ops; i++)
        for (int j = 0; j < p->ops[i].n_param; j++) bad += p->params[p->ops[i].param[j]].stage != p->ops[i].chunk % p->pp;
    check(bad == 0, "%s: every op's parameters are on its stage (chunk %% pp)", what);
}

int main(void) {
    Program p;
    /* balanced: equal blocks, equal shares when the ends are cheap */
    check(compile_with(&p, "plans/tiny.lua", "cpu", "mesh.dp=1", "mesh.pp=2", "model.layers=8", "batch.micro=2", NULL) == 0,
          "tiny, 8 layers, pp 2 compiles");
    invariants(&p, "8 layers pp 2");
    check(p.chunk_layers[0] == 4 && p.chunk_layers[1] == 4, "8 layers pp 2: 4 + 4 (%d + %d)", p.chunk_layers[0],
          p.chunk_layers[1]);
    int wte = param_named(&p, "wte.weight"), copy = -1;
    for (int k = 0; k < p.n_params; k++)
        if (p.params[k].tied_to == wte) copy = k;
    check(copy >= 0 && p.params[wte].stage == 0 && p.params[copy].stage == 1 &&
          p.ops[p.n_ops - 1].param[0] == copy, "pp 2: wte on stage 0, its copy on stage 1 is the LM head's weight");
    program_free(&p);

    /* a large vocabulary makes the LM head dear: the last chunk takes fewer blocks */
    check(compile_with(&p, "plans/tiny.lua", "cpu", "mesh.dp=1", "mesh.pp=2", "model.layers=8", "model.vocab=16384",
                       "batch.micro=2", NULL) == 0, "vocab 16384 pp 2 compiles");
    invariants(&p, "vocab 16384 pp 2");
    check(p.chunk_layers[1] < p.chunk_layers[0], "vocab 16384: the LM head's stage takes fewer blocks (%d + %d)",
          p.chunk_layers[0], p.chunk_layers[1]);
    program_free(&p);

    /* interleaved: pp 2 x 2 chunks, chunk k on stage k % 2 */
    check(compile_with(&p, "plans/tiny.lua", "cpu", "mesh.dp=1", "mesh.pp=2", "pipeline.schedule=interleaved",
                       "pipeline.virtual=2", "batch.micro=2", NULL) == 0, "tiny interleaved pp 2 x 2 compiles");
    invariants(&p, "interleaved 2 x 2");
    int bad = 0;
    for (int k = 0; k < 4; k++) bad += p.chunk_layers[k] != 1;
    for (int i = 0; i < p.n_ops; i++)
        for (int j = 0; j < p.ops[i].n_param; j++) bad += p.params[p.ops[i].param[j]].stage != p.ops[i].chunk % 2;
    check(bad == 0, "interleaved 2 x 2: one block a chunk, chunks 0, 2 on stage 0 and 1, 3 on stage 1");
    program_free(&p);

    /* pipeline.stages is taken as written */
    check(compile_with(&p, "tests/unit/plans/pp_stages.lua", "cpu", NULL) == 0, "pp_stages.lua compiles");
    invariants(&p, "stages {3, 1}");
    check(p.chunk_layers[0] == 3 && p.chunk_layers[1] == 1, "stages {3, 1} honoured (%d, %d)", p.chunk_layers[0],
          p.chunk_layers[1]);
    program_free(&p);
    check(compile_with(&p, "plans/tiny.lua", "cpu", NULL) == 0 &&
          p.n_chunks == 1 && p.chunk_layers[0] == 4 && p.chunk_first_op[0] == 0 && p.chunk_end_op[0] == p.n_ops,
          "pp 1: one chunk of every op");
    program_free(&p);
    return summary();
}
