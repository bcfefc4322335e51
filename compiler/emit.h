/* emit.h: the pieces of the `emit` pass, shared by its files:
 * emit.c (files, stage program skeleton), emit_ops.c (one call per op),
 * emit_step.c (the step: single stage, or a pipeline stage's schedule). */
#ifndef WEFT_EMIT_H
#define WEFT_EMIT_H

#include <stdio.h>

#include "program.h"

typedef struct {
    FILE *f;
    int failed;
} writer;

/* Appends formatted text to the file being written. */
void emit(writer *wr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- comm_env.c ---- */
/* launch.sh (--backend cuda): the plan's NCCL settings as exports. */
void emit_comm_env(writer *o, const Program *p);
/* ---- omp_wait.c ---- */
/* launch.sh's and job.slurm's OpenMP wait policy (spin or sleep) unless the
 * user chose: node_ranks and cores are shell expressions for the ranks on
 * one node and its cores. */
void emit_omp_wait(writer *o, int cuda, const char *node_ranks, const char *cores);

/* ---- launch_slurm.c ---- */
/* job.slurm: the plan's allocation, checked, and srun over the stage programs. */
void emit_job_slurm(writer *o, const Program *p, int cuda);

/* ---- emit_ops.c ---- */
#define NAMEBUF (WF_MAX_NAME + 16)

/* Operand spellings of one op, shared by its forward and backward calls. */
typedef struct {
    char out[NAMEBUF], in0[NAMEBUF], in1[NAMEBUF], w0[NAMEBUF], w1[NAMEBUF], s[NAMEBUF];
    char g0[NAMEBUF], g1[NAMEBUF];  /* the gradients: = w0, w1 but in ZeRO's bucket buffers */
    const char *rows;      /* "N" or "NL" (this rank's tokens under sequence parallelism) */
    const char *row0;      /* first token row this rank holds */
    long width, in_width;
} operands;

void macro_name(const char *prefix, const char *name, char *out, size_t n);
void op_label(const Program *p, int i, char *out, size_t n);
void get_operands(const Program *p, int i, operands *x);
/* While a pipeline chunk is written, its input is the copy received into
 * this stage's arena (tensor 0: none). */
void emit_set_chunk_input(int tensor, int chunk);
void emit_forward_op(writer *o, const Program *p, int i);
void emit_backward_op(writer *o, const Program *p, int i);
int emit_backward_half(writer *o, const Program *p, int i, int weight);
void emit_grad_zeros(writer *o, const Program *p, int i);

/* ---- emit_step.c ---- */
void emit_passes(writer *o, const Program *p);        /* single stage: forward, backward */
void emit_step(writer *o, const Program *p);
void emit_chunk(writer *o, const Program *p, int k);  /* pipeline chunk k */
void emit_pipeline_step(writer *o, const Program *p, int stage);
int assign_staging(const Program *p, int stage, int *staging, int *staging_recv);
int staged_sends(const Program *p);  /* a chunk's output waits for its send in a staging buffer */

/* ---- emit.c ---- */
int stage_first_bucket(const Program *p, int stage);
int stage_count(const Program *p, int stage, int buckets);
/* pp > 1: the stage's receive staging buffers, their count, and floats in one */
int stage_recv_buffers(const Program *p, int stage, long *numel);

#endif
