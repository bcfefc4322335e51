/* fuzz_plan.c: libFuzzer harness for the plan loader and the passes.
 *
 * Each input is a plan: it runs in the sandbox (the same limits as
 * `weft check`, with the CPU limit lowered to keep inputs fast, and pattern
 * functions and string.rep bounded by size, since the watchdog would end the
 * fuzzer) and then through every pass.  Plan errors are the expected outcome;
 * what the fuzzer looks for is a crash, a sanitizer report or an input that
 * outlives libFuzzer's -timeout.  Run from the repository root: seed plans name data
 * and model files by relative paths. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_input.h"
#include "pass_list.h"
#include "sandbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    wf_sandbox_cpu_limit_s = 0.5;
    wf_sandbox_pattern_cap = 256;
    wf_sandbox_rep_cap = (size_t)1 << 20;
    /* libFuzzer's -close_fd_mask sends the watchdog's message to /dev/null:
     * abort, so that libFuzzer prints a report and keeps the input (an exit
     * status of 1 with neither was all CI once saw) */
    wf_sandbox_watchdog_end = abort;
    const char *path = fuzz_input_file("plan.lua", data, size);
    Program p;
    compile_options o = { .plan = path };
    compile_plan(&p, &o);
    program_free(&p);
    return 0;
}
