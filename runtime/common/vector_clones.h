/* vector_clones.h: WF_VECTOR_CLONES before a hot loop's function compiles it
 * three times, for AVX-512, AVX2 and the baseline x86-64 the build targets
 * (SSE2: four floats a vector), and the program picks the best its CPU runs
 * when it loads (GCC's target_clones, an ifunc; the loops of an OpenMP
 * region inside are cloned with it).  GCC emits FMA in the AVX-512 clone
 * where it may contract, so every target builds with -ffp-contract=off (the
 * top CMakeLists.txt; the fake-NCCL runtime of tests/ built without it gave
 * other gradients): each element's arithmetic is the baseline's bit for bit.  Only a reduction whose order follows the vector width
 * (`omp simd reduction`) would differ between CPUs; the cloned functions
 * keep their sums in a fixed number of lanes instead.  Elsewhere (another
 * compiler, another architecture, a sanitizer build) the macro is empty. */
#ifndef WEFT_VECTOR_CLONES_H
#define WEFT_VECTOR_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__CUDACC__)
#define WF_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WF_VECTOR_CLONES
#endif

#endif
