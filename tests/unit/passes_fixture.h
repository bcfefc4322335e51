/* passes_fixture.h: what the unit tests of the passes share: a plan from
 * plans/ (or tests/unit/plans/) compiled through the one pipeline
 * (compile_plan) with --set style overrides, and small sums over the IR. */
#ifndef WEFT_TEST_PASSES_FIXTURE_H
#define WEFT_TEST_PASSES_FIXTURE_H
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pass_list.h"
#include "program.h"

#include "check.h"

/* Compiles `plan` (a path under the source tree: "plans/tiny.lua") for
 * `backend` with the NULL-terminated overrides; 0 on success. */
static int compile_with(Program *p, const char *plan, const char *backend, ...)
    __attribute__((sentinel, unused));
static int compile_with(Program *p, const char *plan, const char *backend, ...) {
    char path[1024];
    const char *sets[32];
    int n = 0;
    va_list ap;
    va_start(ap, backend);
    for (const char *s; n < 32 && (s = va_arg(ap, const char *));) sets[n++] = s;
    va_end(ap);
    snprintf(path, sizeof path, "%s/%s", WEFT_SOURCE_DIR, plan);
    compile_options o = { .plan = path, .overrides = sets, .n_overrides = n, .backend = backend };
    return compile_plan(p, &o);
}

/* Ops of a kind in the whole (sharded) graph. */
static int __attribute__((unused)) count_ops(const Program *p, op_kind k) {
    int n = 0;
    for (int i = 0; i < p->n_ops; i++) n += p->ops[i].kind == k;
    return n;
}

/* The parameter called `name`, or -1 (the first: a tied copy comes later). */
static int __attribute__((unused)) param_named(const Program *p, const char *name) {
    for (int k = 0; k < p->n_params; k++)
        if (strcmp(p->params[k].name, name) == 0) return k;
    return -1;
}

static int __attribute__((unused)) summary(void) {
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
#endif
