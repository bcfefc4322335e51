/* pass_list.h: the compiler's passes in the order they run, and the one
 * driver every command (check, compile, inspect, simulate, calibrate) runs
 * them through.  `load` comes first and is not in the list: it makes the
 * Program the others read. */
#ifndef WEFT_PASS_LIST_H
#define WEFT_PASS_LIST_H

#include <stdio.h>

#include "program.h"

typedef struct {
    const char *name;   /* as --dump=NAME spells it */
    pass_fn run;
    int rewrites;       /* rewrites the graph: verify_ir runs after it */
} wf_pass;

extern const wf_pass WF_PASSES[];
extern const int WF_N_PASSES;

/* 1 for "load" and every name in WF_PASSES. */
int pass_known(const char *name);
/* "load, check, shard, ...": every name --dump takes, for messages. */
const char *pass_names(void);

typedef struct {
    const char *plan;
    const char *const *overrides;  /* "FIELD=VALUE" */
    int n_overrides;
    const char *backend;           /* a backend_find name; NULL: "cpu" */
    const char *dump;              /* NULL, or the pass after which the IR is printed */
    FILE *dump_out;                /* NULL: stdout */
    int no_gradcheck;              /* --no-gradcheck: user kernels' gradient proof skipped */
} compile_options;

/* Loads the plan, sets the backend (memory sizes depend on it), runs every
 * pass, verify_ir after those that rewrite the graph, then the backend's
 * own check.  0, or -1 after reporting. */
int compile_plan(Program *p, const compile_options *o);

#endif
