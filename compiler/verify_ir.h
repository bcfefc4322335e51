/* verify_ir.h: the IR's own invariants, checked after every pass that
 * rewrites the graph (pass_list.c).  pass_check validates the user's model
 * against the plan (plan errors, with the plan file); verify_ir checks what
 * the compiler's rewrites must keep true, on the sharded, partitioned and
 * fused graph that pass_check would not accept (new op kinds, per-rank
 * shapes).  A failure is a compiler bug, reported as an internal error
 * naming the pass. */
#ifndef WEFT_VERIFY_IR_H
#define WEFT_VERIFY_IR_H

#include "program.h"

/* 0, or -1 after reporting the first broken invariant. */
int verify_ir(const Program *p, const char *after_pass);

#endif
