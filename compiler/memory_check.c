/* memory_check.c: the memory pass's placements re-checked (program.h's
 * mem_place): every place lies inside its arena, and no two places of one
 * arena that are live at the same time share a float, but for the planned
 * in-place aliases (memory_inplace.c), each accepted only as planned: the
 * output's alias is the input, at the same offset with the same size, and
 * the input's interval ends at the tick where the output's begins; and the
 * bias adds' shared gradients (memory_grads.c), accepted only as planned:
 * same offset and size, the input gradient's interval beginning inside its
 * output gradient's (or further down a chain of such), not zeroed there.  It runs
 * after every memory pass, so a layout bug is a compile error, not a wrong
 * gradient. */
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "program.h"

void memory_add_place(Program *p, const mem_place *pl) {
    if (p->n_places % 256 == 0)
        p->places = wf_checked(realloc(p->places, sizeof *p->places * (size_t)(p->n_places + 256)), "memory pass");
    p->places[p->n_places++] = *pl;
}

long memory_place_offset(const Program *p, const mem_place *pl) {
    switch (pl->kind) {
    case PLACE_ACT: return p->tensors[pl->id].offset;
    case PLACE_SAVED: return p->ops[pl->id].saved_offset;
    case PLACE_CHUNK_IN: return p->chunk_in_offset[pl->id];
    case PLACE_DACT: return p->tensors[pl->id].doffset;
    case PLACE_DPARAM: return p->ops[pl->id].wg_doffset;
    default: return p->chunk_in_doffset[pl->id];
    }
}

static int in_dacts(const mem_place *pl) {
    return pl->kind == PLACE_DACT || pl->kind == PLACE_DCHUNK_IN || pl->kind == PLACE_DPARAM;
}

/* 0: an activation slot, 1: the stage's recompute region, 2: a gradient set */
static int arena_of(const mem_place *pl) { return in_dacts(pl) ? 2 : pl->region ? 1 : 0; }

/* "activation A_H0_LN_1", "saved SH0_LN_1", ... */
static void place_name(const Program *p, const mem_place *pl, char *out, size_t n) {
    char label[WF_MAX_NAME + 8];
    if (pl->kind == PLACE_CHUNK_IN || pl->kind == PLACE_DCHUNK_IN) {
        snprintf(out, n, "%s A_IN_C%d", pl->kind == PLACE_CHUNK_IN ? "activation" : "gradient", pl->id);
        return;
    }
    int op = pl->kind == PLACE_SAVED || pl->kind == PLACE_DPARAM ? pl->id : p->tensors[pl->id].producer;
    op_label(p, op, label, sizeof label);
    if (pl->kind == PLACE_SAVED) snprintf(out, n, "saved S%s", label + 1);
    else if (pl->kind == PLACE_DPARAM) snprintf(out, n, "parameter gradients of %s", label);
    else snprintf(out, n, "%s %s", pl->kind == PLACE_ACT ? "activation" : "gradient", label);
}

/* x takes y's place in place, as planned (offsets already compared equal):
 * an in-place op's output, whose input dies where it is written; or a bias
 * add's input gradient, which is its output gradient (memory_grads.c),
 * from the bias add's step on, where that one is live */
static int planned_alias(const Program *p, const mem_place *x, const mem_place *y) {
    if (x->kind == PLACE_DACT && y->kind == PLACE_DACT) {
        if (x->id == y->id || x->numel != y->numel || x->zero_op >= 0) return 0;
        if (p->tensors[x->id].dalias == y->id) return y->begin <= x->begin && x->begin <= y->end;
        for (int t = p->tensors[x->id].dalias; t > 0; t = p->tensors[t].dalias)
            if (t == y->id) return 1;  /* further down a chain: each link is checked on its own */
        return 0;
    }
    return x->kind == PLACE_ACT && y->kind == PLACE_ACT && x->id != y->id && p->tensors[x->id].alias == y->id &&
           x->numel == y->numel && y->end == x->begin;
}

static int by_arena(const void *a, const void *b) {
    const mem_place *x = a, *y = b;
    if (x->stage != y->stage) return x->stage - y->stage;
    if (arena_of(x) != arena_of(y)) return arena_of(x) - arena_of(y);
    return x->chunk - y->chunk;
}

int memory_check(const Program *p) {
    if (!p->n_places) return 0;
    mem_place *pl = wf_checked(malloc(sizeof *pl * (size_t)p->n_places), "memory check");
    memcpy(pl, p->places, sizeof *pl * (size_t)p->n_places);
    qsort(pl, (size_t)p->n_places, sizeof *pl, by_arena);
    char a[2 * WF_MAX_NAME], b[2 * WF_MAX_NAME];
    int rc = 0;
    for (int i = 0; i < p->n_places && !rc; i++) {
        long off = memory_place_offset(p, &pl[i]);
        int st = pl[i].stage, arena = arena_of(&pl[i]);
        long size = arena == 2 ? p->dact_numel[st] : arena == 1 ? p->region_numel[st] : p->act_numel[st];
        if (off < 0 || off + pl[i].numel > size) {
            place_name(p, &pl[i], a, sizeof a);
            wf_error("internal: memory pass: stage %d: %s at %ld+%ld lies outside its arena of %ld floats",
                     pl[i].stage, a, off, pl[i].numel, size);
            rc = -1;
        }
        /* a gradient planned to share its output gradient's place (the
         * emitter then writes it nowhere) must lie there */
        if (!rc && pl[i].kind == PLACE_DACT && p->tensors[pl[i].id].dalias > 0 &&
            p->tensors[p->tensors[pl[i].id].dalias].doffset != off) {
            place_name(p, &pl[i], a, sizeof a);
            wf_error("internal: memory pass: stage %d: %s at %ld shares its output gradient's place, at %ld",
                     pl[i].stage, a, off, p->tensors[p->tensors[pl[i].id].dalias].doffset);
            rc = -1;
        }
        /* the same arena (and, for gradients, chunk) is a run of the sorted places */
        for (int j = i + 1; j < p->n_places && !rc && by_arena(&pl[i], &pl[j]) == 0; j++) {
            if (pl[j].begin > pl[i].end || pl[i].begin > pl[j].end) continue;
            long o2 = memory_place_offset(p, &pl[j]);
            if (o2 >= off + pl[i].numel || off >= o2 + pl[j].numel) continue;
            if (o2 == off && (planned_alias(p, &pl[i], &pl[j]) || planned_alias(p, &pl[j], &pl[i]))) continue;
            place_name(p, &pl[i], a, sizeof a);
            place_name(p, &pl[j], b, sizeof b);
            wf_error("internal: memory pass: stage %d: %s (@%ld+%ld, live %d..%d) overlaps %s (@%ld+%ld, "
                     "live %d..%d)", pl[i].stage, a, off, pl[i].numel, pl[i].begin, pl[i].end, b, o2,
                     pl[j].numel, pl[j].begin, pl[j].end);
            rc = -1;
        }
    }
    free(pl);
    return rc;
}

void memory_dump(const Program *p, FILE *out) {
    char name[2 * WF_MAX_NAME];
    fprintf(out, "memory places (activation slot: live forward ops; the stage's recompute region: forward ops, "
                 "or under full recompute ticks, each block's forward then its backward; gradient set: live "
                 "backward steps of its chunk, zeroed before op; \"in place of\": an in-place op's output in "
                 "its dying input's place; \"shares the place of\": a bias add's input gradient, its output gradient; "
                 "\"parameter gradients of\": an op's, staged in B for W, ZeRO >= 2 under zb-h1):\n");
    for (int i = 0; i < p->n_places; i++) {
        const mem_place *pl = &p->places[i];
        place_name(p, pl, name, sizeof name);
        fprintf(out, "  stage %d", pl->stage);
        if (pl->chunk >= 0) fprintf(out, " chunk %d", pl->chunk);
        if (pl->region) fprintf(out, " region");
        fprintf(out, "  %-40s @%ld+%ld live %d..%d", name, memory_place_offset(p, pl), pl->numel, pl->begin,
                pl->end);
        if (pl->kind == PLACE_ACT && p->tensors[pl->id].alias > 0) {  /* memory_inplace.c */
            mem_place in = *pl;
            in.id = p->tensors[pl->id].alias;
            place_name(p, &in, name, sizeof name);
            fprintf(out, " in place of %s", name + strlen("activation "));
        }
        if (pl->kind == PLACE_DACT && p->tensors[pl->id].dalias > 0) {  /* memory_grads.c */
            mem_place to = *pl;
            to.id = p->tensors[pl->id].dalias;
            place_name(p, &to, name, sizeof name);
            fprintf(out, " shares the place of %s", name);
        } else if (in_dacts(pl)) {
            if (pl->zero_op >= 0) fprintf(out, " zeroed before op %d", pl->zero_op);
            else fprintf(out, " received whole");
        }
        fputc('\n', out);
    }
    for (int s = 0; s < p->pp; s++)
        fprintf(out, "stage %d: activation slot %ld floats x %d, recompute region %ld floats, "
                     "activation-gradient set %ld floats x %d\n", s, p->act_numel[s], program_slots(p, s),
                p->region_numel[s], p->dact_numel[s], program_dact_sets(p, s));
}
