/* emu.cc: the emulator's scheduler (fibers, barriers, warp exchanges) and the
 * CPU versions of the CUDA runtime calls.  See emu.h for what is emulated. */
#include "emu.h"
#include "fiber.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <deque>
#include <map>
#include <vector>

namespace wf_emu {
namespace {

enum State { READY, BLOCK_WAIT, WARP_WAIT, DONE };

/* A fiber: a stack and the context saved on it while it is not running. */
struct Fiber {
    Context ctx;
    char *stack = nullptr;  /* STACK bytes above a PROT_NONE guard page */
};

/* One thread of the running block.  It holds a fiber from its start to its
 * end only: a thread that ends hands its fiber to the next thread to start,
 * so a kernel without barriers runs all its threads on one warm stack,
 * one after another, without a context switch. */
struct Thread {
    State state = DONE;
    uint3 tid;
    Fiber *fiber = nullptr;
};

/* The guard is large so that a big local array cannot step over it into the
 * next fiber's stack. */
constexpr size_t STACK = 64 * 1024, GUARD = 64 * 1024;
constexpr size_t SMEM_DEFAULT = 48 * 1024, SMEM_MAX = 227 * 1024; /* H100/H200 opt-in limit */

struct Warp {
    int lanes = 0, live = 0, waiting = 0, exited = 0;
    unsigned gen = 0;        /* completed exchanges: picks the deposit buffer */
    uint64_t slot[2][32];    /* double-buffered, so a fast lane's next deposit
                                cannot overwrite what a slow lane has yet to read */
};

struct Scheduler {
    std::deque<Fiber> fibers;    /* every fiber made; a deque: contexts must not move once saved */
    std::vector<Fiber *> spare;  /* those no thread holds, the last one freed on top */
    std::vector<Thread> thread;  /* the running block's */
    std::vector<Warp> warps;
    Context main_ctx;
    int current = -1, threads = 0, live = 0, block_waiting = 0, exited = 0;
    const char *kernel = "";
    const std::function<void()> *body = nullptr;
    /* this launch's dynamic shared memory: 256-byte aligned, as a GPU's
     * (wmma fragments need 32 bytes; a vector's malloc gives 16) */
    unsigned char *smem = nullptr;
    size_t smem_bytes = 0, smem_cap = 0;
    std::map<const void *, size_t> smem_limit;  /* cudaFuncSetAttribute */
    cudaError_t last_error = cudaSuccess;
    const char *fault = nullptr;
    bool reverse = false;  /* WF_EMU_ORDER=reverse: the last block, and a block's last thread, first */
} S;

[[noreturn]] void fail(const char *fmt, ...) {
    fprintf(stderr, "cuda_emu: kernel %s, block (%u,%u,%u)", S.kernel, blockIdx.x, blockIdx.y,
            blockIdx.z);
    if (S.current >= 0)
        fprintf(stderr, ", thread (%u,%u,%u)", threadIdx.x, threadIdx.y, threadIdx.z);
    fprintf(stderr, ": ");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    exit(1);
}

Thread &me() {
    if (S.current < 0) fail("a device function was called outside a kernel launch");
    return S.thread[S.current];
}

void fiber_main();

/* A fiber for a thread that starts: the spare one freed last (its stack is
 * still in the cache), or a new one. */
Fiber *take_fiber() {
    if (!S.spare.empty()) {
        Fiber *f = S.spare.back();
        S.spare.pop_back();
        return f;
    }
    void *m = mmap(nullptr, STACK + GUARD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) fail("cannot map a fiber stack");
    mprotect(m, GUARD, PROT_NONE); /* a stack overflow faults instead of corrupting */
    S.fibers.emplace_back();
    Fiber &f = S.fibers.back();
    f.stack = (char *)m + GUARD;
    context_init(&f.ctx, f.stack, STACK, fiber_main);
    return &f;
}

/* The scheduling order: round robin over the block's threads, each ready
 * one running until it finishes or waits (first to last, or last to first
 * under WF_EMU_ORDER=reverse).  The next ready thread after `from` in this
 * sweep (from -1: the sweep's start), or -1 where the sweep ends. */
int next_ready(int from) {
    int n = S.threads;
    int pos = from < 0 ? 0 : (S.reverse ? n - 1 - from : from) + 1;
    for (; pos < n; pos++) {
        int i = S.reverse ? n - 1 - pos : pos;
        if (S.thread[i].state == READY) return i;
    }
    return -1;
}

/* Leaves the running fiber (saved in from) for thread next, on its fiber
 * (a fresh one when it has not started), or for the scheduler (next -1: the
 * sweep ended).  A fiber switches straight to the next one: one context
 * switch per hand-over, not two through the scheduler. */
void switch_to(Context *from, int next) {
    Context *to = &S.main_ctx;
    S.current = next;
    if (next >= 0) {
        Thread &t = S.thread[next];
        if (!t.fiber) t.fiber = take_fiber();
        threadIdx = t.tid;
        to = &t.fiber->ctx;
    }
    context_switch(from, to);
}

/* The running thread waits (its state says at what): the next one runs. */
void yield() {
    Thread &t = me();
    switch_to(&t.fiber->ctx, next_ready(S.current));
}

/* A fiber runs one thread of the kernel after another: a thread that ends
 * hands the fiber on to the next thread of the sweep when that one has not
 * started (no context switch), else frees it (to be picked up by a thread
 * that starts later, which it then runs from the top of this loop). */
void fiber_main() {
    for (;;) {
        (*S.body)();
        Thread &t = me();
        Warp &w = S.warps[S.current / 32];
        t.state = DONE;
        S.live--;
        S.exited++;
        w.live--;
        w.exited++;
        if (S.block_waiting > 0)
            fail("thread exited while %d thread(s) wait at __syncthreads (undefined in CUDA)",
                 S.block_waiting);
        if (w.waiting > 0)
            fail("thread exited while %d lane(s) of its warp wait at a warp operation (undefined in CUDA)",
                 w.waiting);
        Fiber *f = t.fiber;
        t.fiber = nullptr;
        int next = next_ready(S.current);
        if (next >= 0 && !S.thread[next].fiber) {
            S.thread[next].fiber = f;
            S.current = next;
            threadIdx = S.thread[next].tid;
            continue;
        }
        S.spare.push_back(f);
        switch_to(&f->ctx, next);
    }
}

/* A segmentation fault inside a kernel names the kernel, block and thread,
 * and says whether it hit a fiber's stack guard (so a too-deep stack is not
 * mistaken for a bad pointer).  Runs on its own stack: the fiber's may be
 * the one that overflowed.  Not async-signal-safe, but the process ends. */
void on_segv(int sig, siginfo_t *info, void *) {
    const char *what = "an address the kernel may not touch (out of bounds?)";
    char *addr = (char *)info->si_addr;
    for (Fiber &f : S.fibers)
        if (addr >= f.stack - GUARD && addr < f.stack)
            what = "a fiber's stack guard: the thread used more than 64 KiB of stack";
    if (S.current < 0) {
        signal(sig, SIG_DFL);
        return; /* not in a kernel: the default action */
    }
    fail("%s at %p: %s", sig == SIGSEGV ? "segmentation fault" : "bus error", info->si_addr, what);
}

void catch_faults() {
    static bool done = false;
    if (done) return;
    done = true;
    static char alt[64 * 1024];
    stack_t ss = {};
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    sigaltstack(&ss, nullptr);
    for (int sig : {SIGSEGV, SIGBUS}) {
        struct sigaction old = {}, sa = {};
        if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue; /* keep others' */
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(sig, &sa, nullptr);
    }
}

const char *describe_waits() {
    static char buf[256];
    int block = 0, warp = 0;
    for (int i = 0; i < S.threads; i++) {
        State s = S.thread[i].state;
        block += s == BLOCK_WAIT;
        warp += s == WARP_WAIT;
    }
    snprintf(buf, sizeof buf, "%d thread(s) at __syncthreads, %d at warp operations, %d exited",
             block, warp, S.exited);
    return buf;
}

void run_block(dim3 block) {
    int n = S.threads;
    S.live = n;
    S.block_waiting = S.exited = 0;
    S.warps.assign((n + 31) / 32, Warp());
    for (int w = 0; w < (int)S.warps.size(); w++) {
        int lanes = n - 32 * w < 32 ? n - 32 * w : 32;
        S.warps[w].lanes = S.warps[w].live = lanes;
    }
    if (S.smem_bytes) memset(S.smem, 0xff, S.smem_bytes);
    S.thread.resize(n);
    for (int i = 0; i < n; i++) {
        Thread &t = S.thread[i];
        t.state = READY;
        t.tid = make_uint3(i % block.x, i / block.x % block.y, i / (block.x * block.y));
    }
    /* one sweep of the round robin at a time (the fibers hand over to each
     * other, the last one of the sweep back here) */
    while (S.live > 0) {
        int first = next_ready(-1);
        if (first < 0) fail("deadlock: no thread can go on (%s)", describe_waits());
        switch_to(&S.main_ctx, first);
    }
}

}  // namespace

bool fault(const char *name) { return S.fault && strcmp(S.fault, name) == 0; }

/* WF_EMU_ASYNC=1: launches and asynchronous copies and memsets queue up and
 * run, in issue order, at the next host wait (a stream, event or device
 * synchronize, a synchronous copy or memset, cudaFree), as on a GPU, where a
 * launch returns before its kernel has run: host code that reads a result
 * without waiting for the device reads stale data here too. */
static std::deque<std::function<void()>> pending;
static void run_grid(const char *name, dim3 grid, dim3 block, size_t smem, const std::function<void()> &body);

static bool async_mode() {
    const char *a = getenv("WF_EMU_ASYNC");
    return a && *a && strcmp(a, "0") != 0;
}

void drain() {
    while (!pending.empty()) {
        std::function<void()> op = std::move(pending.front());
        pending.pop_front();
        op();
    }
}

/* CUDA graphs: between cudaStreamBeginCapture and cudaStreamEndCapture
 * launches, asynchronous copies and memsets are recorded, not run (one
 * capture at a time: there is one sequential device); a graph launch issues
 * the recorded operations again, in order, with the arguments they were
 * captured with.  A host wait during a capture (stream or device
 * synchronize, a synchronous copy or memset) is refused and invalidates it,
 * as in CUDA's thread-local capture mode. */
static std::vector<std::function<void()>> *capturing;
static bool capture_invalid;

/* Which streams a capture holds, by CUDA's rules for cross-stream capture:
 * the origin (cudaStreamBeginCapture's stream), and every stream that waited
 * on an event recorded in the capture (a fork).  Each forked stream must be
 * joined back before cudaStreamEndCapture: the origin waits on an event
 * recorded on it after its last operation (the emulator takes direct joins
 * only, the form coll_nccl.c uses), else cudaErrorStreamCaptureUnjoined.  An
 * operation issued during a capture on a stream that never joined it runs at
 * once on a GPU, outside the graph (in thread-local mode, legally): here it
 * is reported, as it is always a missing cudaStreamWaitEvent in weft. */
struct capture_streams {
    cudaStream_t origin = nullptr;
    std::map<cudaStream_t, long> issued; /* the members: operations issued on each */
    std::map<cudaStream_t, long> joined; /* how many of them the origin has waited for */
    int id = 0;                          /* of this capture, for its events */
};
static capture_streams cap;

void enqueue(std::function<void()> op) {
    if (capturing) capturing->push_back(std::move(op));
    else if (async_mode()) pending.push_back(std::move(op));
    else op();
}

void enqueue_on(cudaStream_t stream, std::function<void()> op) {
    if (capturing) {
        auto member = cap.issued.find(stream);
        if (member == cap.issued.end()) {
            fprintf(stderr, "cuda_emu: an operation on stream %p while stream %p is captured, which that stream "
                    "never joined (no cudaStreamWaitEvent on an event recorded in the capture): a GPU runs it "
                    "at once, outside the graph\n", (void *)stream, (void *)cap.origin);
            exit(1);
        }
        member->second++;
    }
    enqueue(std::move(op));
}

/* a call that waits for the host: refused while capturing */
static cudaError_t host_wait() {
    if (capturing) {
        capture_invalid = true;
        return cudaErrorStreamCaptureUnsupported;
    }
    drain();
    return cudaSuccess;
}

void kernel_error(const char *what) { fail("%s", what); }

void launch(const char *name, const void *kernel, dim3 grid, dim3 block, size_t smem,
            cudaStream_t stream, const std::function<void()> &body) {
    /* one sequential device: every stream is the same (but see enqueue_on) */
    S.fault = getenv("WF_EMU_FAULT");
    if (S.fault && !*S.fault) S.fault = nullptr;
    const char *order = getenv("WF_EMU_ORDER");
    S.reverse = order && strcmp(order, "reverse") == 0;
    if (S.current >= 0) fail("kernel %s launched from device code (not emulated)", name);
    if (*S.kernel) /* the scheduler is one global: launches come from one host thread */
        fail("kernel %s launched from a second host thread while %s runs (not emulated)", name,
             S.kernel);
    long threads = (long)block.x * block.y * block.z;
    auto lim = S.smem_limit.find(kernel);
    size_t smem_max = lim == S.smem_limit.end() ? SMEM_DEFAULT : lim->second;
    const char *bad = nullptr;
    if (threads < 1 || threads > 1024 || block.z > 64) bad = "block size out of range (1..1024 threads, z <= 64)";
    else if (grid.x < 1 || grid.y < 1 || grid.z < 1 || grid.y > 65535 || grid.z > 65535 ||
             grid.x > 2147483647u)
        bad = "grid size out of range";
    else if (smem > smem_max)
        bad = "dynamic shared memory over the kernel's limit (48 KiB unless cudaFuncSetAttribute raised it)";
    if (bad) {
        fprintf(stderr, "cuda_emu: launch of %s (grid %u,%u,%u; block %u,%u,%u; smem %zu): %s\n", name,
                grid.x, grid.y, grid.z, block.x, block.y, block.z, smem, bad);
        S.last_error = smem > smem_max ? cudaErrorInvalidValue : cudaErrorInvalidConfiguration;
        return;
    }
    if (async_mode() || capturing) { /* runs at the next host wait, in issue order, or per graph launch */
        std::function<void()> held = body;
        enqueue_on(stream, [name, grid, block, smem, held] { run_grid(name, grid, block, smem, held); });
        return;
    }
    run_grid(name, grid, block, smem, body);
}

/* One launch's grid, now. */
static void run_grid(const char *name, dim3 grid, dim3 block, size_t smem, const std::function<void()> &body) {
    long threads = (long)block.x * block.y * block.z;
    catch_faults();
    S.kernel = name;
    S.body = &body;
    S.threads = (int)threads;
    if (smem > S.smem_cap) {
        free(S.smem);
        S.smem_cap = (smem + 255) / 256 * 256;
        S.smem = (unsigned char *)aligned_alloc(256, S.smem_cap);
        if (!S.smem) fail("cannot allocate %zu bytes of dynamic shared memory", smem);
    }
    S.smem_bytes = smem;
    gridDim = grid;
    blockDim = block;
    long blocks = (long)grid.x * grid.y * grid.z;
    for (long k = 0; k < blocks; k++) {
        long b = S.reverse ? blocks - 1 - k : k;
        blockIdx = make_uint3((unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y),
                              (unsigned)(b / ((long)grid.x * grid.y)));
        run_block(block);
    }
    S.kernel = "";
}

void *dynamic_smem() {
    me();
    return S.smem_bytes ? S.smem : nullptr;
}

void syncthreads() {
    Thread &f = me();
    if (fault("syncthreads")) return;
    if (S.exited > 0)
        fail("__syncthreads after %d thread(s) of the block exited (undefined in CUDA)", S.exited);
    f.state = BLOCK_WAIT;
    if (++S.block_waiting == S.live) { /* the last one in releases the block */
        for (int i = 0; i < S.threads; i++)
            if (S.thread[i].state == BLOCK_WAIT) S.thread[i].state = READY;
        S.block_waiting = 0;
    }
    yield();
}

int lane() { return me(), S.current % 32; }
int warp_lanes() { return S.warps[me(), S.current / 32].lanes; }

const uint64_t *warp_exchange(unsigned mask, uint64_t mine, const char *op) {
    Thread &f = me();
    Warp &w = S.warps[S.current / 32];
    unsigned exist = w.lanes == 32 ? 0xffffffffu : (1u << w.lanes) - 1;
    if ((mask & exist) != exist)
        fail("%s with mask 0x%08x: only masks naming every lane of the warp are emulated", op, mask);
    if (w.exited > 0)
        fail("%s after %d lane(s) of the warp exited (undefined in CUDA)", op, w.exited);
    unsigned buf = w.gen & 1;
    w.slot[buf][S.current % 32] = mine;
    f.state = WARP_WAIT;
    if (++w.waiting == w.live) {
        int first = S.current / 32 * 32;
        for (int l = 0; l < w.lanes; l++)
            if (S.thread[first + l].state == WARP_WAIT) S.thread[first + l].state = READY;
        w.waiting = 0;
        w.gen++;
    }
    yield();
    return w.slot[buf];
}

}  // namespace wf_emu

using wf_emu::S;

/* ---- the CUDA runtime, on the CPU ------------------------------------------------ */
/* pinned host blocks (start -> bytes): NCCL reads and writes device memory
 * only, so the emulated NCCL asks whether a buffer lies in one */
static std::map<uintptr_t, size_t> pinned;
bool wf_emu::pinned_host(const void *p) {
    auto it = pinned.upper_bound((uintptr_t)p);
    return it != pinned.begin() && (uintptr_t)p < std::prev(it)->first + std::prev(it)->second;
}

extern "C" {

cudaError_t cudaGetLastError(void) {
    cudaError_t e = S.last_error;
    S.last_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError(void) { return S.last_error; }

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnjoined: return "capture sequence contains a fork that was not joined to the primary stream";
    case cudaErrorStreamCaptureUnmatched: return "capture was not ended in the same stream as it began";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    default: return "unknown error (emulated)";
    }
}
const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureUnjoined: return "cudaErrorStreamCaptureUnjoined";
    case cudaErrorStreamCaptureUnmatched: return "cudaErrorStreamCaptureUnmatched";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    default: return "cudaErrorUnknown";
    }
}

/* every launch and copy is complete when its call returns (WF_EMU_ASYNC:
 * when the host next waits, here) */
cudaError_t cudaDeviceSynchronize(void) { return wf_emu::host_wait(); }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return wf_emu::host_wait(); }
cudaError_t cudaStreamQuery(cudaStream_t) { return wf_emu::host_wait(); }

/* streams and events are distinct non-null handles; events hold a time */
struct CUstream_st { int unused; };
struct CUevent_st {
    double t;
    int capture;          /* the capture it was recorded in (wf_emu::cap.id), or 0 */
    cudaStream_t stream;  /* and on which stream, after how many of its operations */
    long seq;
};
cudaError_t cudaStreamCreate(cudaStream_t *s) { *s = new CUstream_st(); return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) { return cudaStreamCreate(s); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned, int) { return cudaStreamCreate(s); }
cudaError_t cudaStreamDestroy(cudaStream_t s) { delete s; return cudaSuccess; }
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status) {
    bool member = wf_emu::capturing && wf_emu::cap.issued.count(s);
    *status = member ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}
/* during a capture (wf_emu::cap): waiting on an event recorded in it joins
 * the stream to the capture; the origin waiting joins the event's stream
 * back, up to the operations before the record */
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
    wf_emu::capture_streams &cap = wf_emu::cap;
    if (!wf_emu::capturing || e->capture != cap.id) return cudaSuccess;
    if (!cap.issued.count(s)) cap.issued[s] = cap.joined[s] = 0;
    if (s == cap.origin && e->seq > cap.joined[e->stream]) cap.joined[e->stream] = e->seq;
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = new CUevent_st(); return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    e->t = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    auto member = wf_emu::cap.issued.find(s);
    bool captured = wf_emu::capturing && member != wf_emu::cap.issued.end();
    e->capture = captured ? wf_emu::cap.id : 0;
    e->stream = s;
    e->seq = captured ? member->second : 0;
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { wf_emu::drain(); return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t) { wf_emu::drain(); return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    *ms = (float)(1e3 * (b->t - a->t));
    return cudaSuccess;
}

/* CUDA graphs (see wf_emu::capturing): a graph and its executable are the
 * recorded operations */
struct CUgraph_st { std::vector<std::function<void()>> ops; };
struct CUgraphExec_st { std::vector<std::function<void()>> ops; };
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
    if (wf_emu::capturing) return cudaErrorIllegalState;
    wf_emu::capturing = new std::vector<std::function<void()>>();
    wf_emu::capture_invalid = false;
    int id = wf_emu::cap.id + 1;
    wf_emu::cap = wf_emu::capture_streams();
    wf_emu::cap.id = id;
    wf_emu::cap.origin = s;
    wf_emu::cap.issued[s] = 0;
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph) {
    if (!wf_emu::capturing) return cudaErrorIllegalState;
    if (s != wf_emu::cap.origin) return cudaErrorStreamCaptureUnmatched;
    std::unique_ptr<std::vector<std::function<void()>>> ops(wf_emu::capturing);
    wf_emu::capturing = nullptr;
    *graph = nullptr;
    bool unjoined = false;
    for (const auto &m : wf_emu::cap.issued)
        if (m.first != s && m.second > wf_emu::cap.joined[m.first]) {
            fprintf(stderr, "cuda_emu: stream %p forked from the capture of stream %p has %ld operation(s), of "
                    "which the origin waited for %ld\n", (void *)m.first, (void *)s, m.second,
                    wf_emu::cap.joined[m.first]);
            unjoined = true;
        }
    wf_emu::cap.issued.clear();
    if (wf_emu::capture_invalid) return cudaErrorStreamCaptureInvalidated;
    if (unjoined) return cudaErrorStreamCaptureUnjoined;
    *graph = new CUgraph_st{std::move(*ops)};
    return cudaSuccess;
}
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *count) {
    if (nodes) return cudaErrorInvalidValue; /* only the count is emulated */
    *count = graph->ops.size();
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long) {
    *exec = new CUgraphExec_st{graph->ops};
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t) {
    if (wf_emu::capturing) return cudaErrorStreamCaptureUnsupported;
    for (const auto &op : exec->ops) wf_emu::enqueue(op);
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) { delete graph; return cudaSuccess; }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) { delete exec; return cudaSuccess; }

/* memory: all of it is host memory, so every kind of copy is a memmove.
 * Allocating or freeing while a stream is captured is refused and
 * invalidates the capture, as CUDA does in the thread-local and global
 * capture modes (cudaMalloc is not a stream operation: a replayed graph
 * would not allocate again). */
static cudaError_t refused_in_capture() {
    if (!wf_emu::capturing) return cudaSuccess;
    wf_emu::capture_invalid = true;
    return cudaErrorStreamCaptureUnsupported;
}
static cudaError_t alloc(void **p, size_t bytes) {
    if (cudaError_t e = refused_in_capture()) return e;
    *p = aligned_alloc(256, (bytes + 255) / 256 * 256);
    return *p || !bytes ? cudaSuccess : cudaErrorMemoryAllocation;
}
static cudaError_t alloc_pinned(void **p, size_t bytes) {
    cudaError_t e = alloc(p, bytes);
    if (e == cudaSuccess && *p) pinned[(uintptr_t)*p] = bytes;
    return e;
}
/* device (and managed) blocks, start -> bytes: what cudaMemGetInfo reports
 * in use, as a GPU's would (without a context's own memory) */
static std::map<uintptr_t, size_t> on_device;
static size_t device_used;
static cudaError_t alloc_device(void **p, size_t bytes) {
    cudaError_t e = alloc(p, bytes);
    if (e == cudaSuccess && *p) {
        on_device[(uintptr_t)*p] = bytes;
        device_used += bytes;
    }
    return e;
}
cudaError_t cudaMalloc(void **p, size_t bytes) { return alloc_device(p, bytes); }
cudaError_t cudaMallocManaged(void **p, size_t bytes, unsigned) { return alloc_device(p, bytes); }
cudaError_t cudaMallocHost(void **p, size_t bytes) { return alloc_pinned(p, bytes); }
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned) { return alloc_pinned(p, bytes); }
cudaError_t cudaFree(void *p) {
    if (cudaError_t e = wf_emu::host_wait()) return e;
    auto it = on_device.find((uintptr_t)p);
    if (it != on_device.end()) {
        device_used -= it->second;
        on_device.erase(it);
    }
    free(p);
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p) {
    if (cudaError_t e = wf_emu::host_wait()) return e;
    pinned.erase((uintptr_t)p);
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind) {
    if (cudaError_t e = wf_emu::host_wait()) return e;
    memmove(dst, src, n);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind, cudaStream_t s) {
    wf_emu::enqueue_on(s, [dst, src, n] { memmove(dst, src, n); });
    return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int v, size_t n) {
    if (cudaError_t e = wf_emu::host_wait()) return e;
    memset(p, v, n);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
    wf_emu::enqueue_on(s, [p, v, n] { memset(p, v, n); });
    return cudaSuccess;
}
/* __constant__ and __device__ variables are host globals: copy in place */
cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t n, size_t offset,
                               cudaMemcpyKind) {
    wf_emu::drain();
    memmove((char *)symbol + offset, src, n);
    return cudaSuccess;
}
cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t n, size_t offset,
                                    cudaMemcpyKind k, cudaStream_t) {
    return cudaMemcpyToSymbol(symbol, src, n, offset, k);
}
cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t n, size_t offset,
                                 cudaMemcpyKind) {
    memmove(dst, (const char *)symbol + offset, n);
    return cudaSuccess;
}
/* the host's memory stands for the device's; the emulated allocations
 * live in it are in use */
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
    *total = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    *free_bytes = *total > device_used ? *total - device_used : 0;
    return cudaSuccess;
}

/* one emulated device, or WF_EMU_DEVICES of them (1..8): names only, so that
 * the ranks of a node pick different devices (runtime/cuda/device.c) and
 * comm = "nccl" accepts them; every device is this process's one CPU */
static int devices() {
    const char *n = getenv("WF_EMU_DEVICES");
    int d = n ? atoi(n) : 1;
    return d < 1 ? 1 : d > 8 ? 8 : d;
}
static int current_device;
cudaError_t cudaGetDeviceCount(int *n) { *n = devices(); return cudaSuccess; }
cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int d) {
    if (d < 0 || d >= devices()) return cudaErrorInvalidDevice;
    snprintf(bus, (size_t)len, "0000:%02x:00.0", d);
    return cudaSuccess;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
    *least = 0;
    *greatest = -5; /* an H100's */
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) {
    if (d < 0 || d >= devices()) return cudaErrorInvalidDevice;
    current_device = d;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *d) { *d = current_device; return cudaSuccess; }
/* an H100-like device with 2 multiprocessors (kernels that size their grid
 * by the SM count still run several blocks, but few) */
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
    if (d < 0 || d >= devices()) return cudaErrorInvalidDevice;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "cuda_emu (CPU)");
    p->totalGlobalMem = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    p->sharedMemPerBlock = wf_emu::SMEM_DEFAULT;
    p->sharedMemPerBlockOptin = wf_emu::SMEM_MAX;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->multiProcessorCount = 2;
    p->major = 9;
    p->minor = 0;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int) {
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; break;
    case cudaDevAttrWarpSize: *v = 32; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = (int)wf_emu::SMEM_DEFAULT; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = (int)wf_emu::SMEM_MAX; break;
    case cudaDevAttrMultiProcessorCount: *v = 2; break;
    case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
    /* the host and the emulated kernels share memory like a Linux GPU does */
    case cudaDevAttrConcurrentManagedAccess: *v = 1; break;
    default: *v = 0; return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void *func, cudaFuncAttribute attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
    if (value < 0 || (size_t)value > wf_emu::SMEM_MAX) return cudaErrorInvalidValue;
    S.smem_limit[func] = (size_t)value;
    return cudaSuccess;
}

}  // extern "C"
