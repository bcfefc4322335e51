/* fiber.cc: see fiber.h. */
#include "fiber.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

namespace wf_emu {

#if defined(__x86_64__) && !defined(WF_EMU_UCONTEXT)

/* wf_emu_swap(&from->sp, to->sp): push the callee-saved registers and the
 * MXCSR / x87 control words, save rsp, load the other rsp, pop theirs, ret.
 * The control words are loaded only where they differ from the running
 * ones (ldmxcsr and fldcw stall the pipeline: most of a switch's cost, and
 * the kernels never change them). */
extern "C" void wf_emu_swap(void **save_sp, void *next_sp);
asm(R"(
    .text
    .globl wf_emu_swap
    .type wf_emu_swap, @function
wf_emu_swap:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    movq $0, (%rsp)
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq (%rsp), %rax
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    cmpq (%rsp), %rax
    je 1f
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
1:
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size wf_emu_swap, .-wf_emu_swap
    .section .note.GNU-stack,"",@progbits
    .text
)");

void context_init(Context *ctx, char *stack, size_t size, void (*entry)()) {
    /* the frame wf_emu_swap pops: control words, six registers, then it
     * "returns" into entry with rsp = top - 8, as a call would leave it */
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)top;
    *--sp = 0;                   /* entry's return address: it never returns */
    *--sp = (uint64_t)entry;
    for (int r = 0; r < 6; r++) *--sp = 0;
    uint32_t mxcsr;
    uint16_t fpcw;
    asm volatile("stmxcsr %0" : "=m"(mxcsr));
    asm volatile("fnstcw %0" : "=m"(fpcw));
    *--sp = (uint64_t)mxcsr | (uint64_t)fpcw << 32;
    ctx->sp = sp;
}

void context_switch(Context *from, Context *to) { wf_emu_swap(&from->sp, to->sp); }

#else

void context_init(Context *ctx, char *stack, size_t size, void (*entry)()) {
    if (getcontext(&ctx->uc) != 0) { perror("cuda_emu: getcontext"); exit(1); }
    ctx->uc.uc_stack.ss_sp = stack;
    ctx->uc.uc_stack.ss_size = size;
    ctx->uc.uc_link = nullptr;
    makecontext(&ctx->uc, entry, 0);
}

void context_switch(Context *from, Context *to) {
    if (swapcontext(&from->uc, &to->uc) != 0) { perror("cuda_emu: swapcontext"); exit(1); }
}

#endif

}  // namespace wf_emu
