/* fiber.h: the emulator's context switch: a fiber is a stack and the saved
 * registers of whoever is not running on it.  On x86-64 a dozen instructions
 * (callee-saved registers and the FPU control words, no system call);
 * elsewhere, or built with -DWF_EMU_UCONTEXT, ucontext's swapcontext, which
 * also saves the signal mask: a system call per switch, about ten times
 * slower over the kernel check (millions of switches). */
#ifndef WEFT_CUDA_EMU_FIBER_H
#define WEFT_CUDA_EMU_FIBER_H

#include <stddef.h>
#if !defined(__x86_64__) || defined(WF_EMU_UCONTEXT)
#include <ucontext.h>
#endif

namespace wf_emu {

struct Context {
#if defined(__x86_64__) && !defined(WF_EMU_UCONTEXT)
    void *sp = nullptr;  /* the saved registers sit on the stack, below this */
#else
    ucontext_t uc;
#endif
};

/* Prepares ctx to run entry() (which must never return) on the stack. */
void context_init(Context *ctx, char *stack, size_t size, void (*entry)());
/* Saves the running context into from and resumes to. */
void context_switch(Context *from, Context *to);

}  // namespace wf_emu

#endif
