/* emu_cublaslt.cc: a fake cuBLASLt, so that runtime/cuda/gemm.cu itself (its
 * row-major to column-major swap, plan cache, bias conversion and fallbacks)
 * runs on the emulator in the test cuda_emu_gemm (test_gemm.cc).  The kernel
 * and program builds keep emu_gemm.cc, which replaces gemm.cu outright.
 *
 * Only the calls gemm.cu makes.  What the real library refuses, this one
 * refuses too, each rule from cublasLt.h's comments or the cuBLAS
 * documentation's cublasLtMatmul() type table:
 *   - an attribute buffer whose size is not the attribute's type's
 *     (cublasLt*SetAttribute: "sizeInBytes doesn't match size of internal
 *     storage": INVALID_VALUE);
 *   - a type combination outside the table rows gemm.cu relies on
 *     (CUBLAS_COMPUTE_32F with scale fp32: A/B/C/D fp32, or A/B bf16 (fp16)
 *     with C = D bf16 (fp16) or fp32; the FAST_16BF / FAST_16F / FAST_TF32
 *     compute types with everything fp32): the heuristic says NOT_SUPPORTED;
 *   - a bias whose CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE is not D's type
 *     ("the same type as the elements of output matrix (Dtype)" outside the
 *     integer and fp8 kernels), a GELU / DGELU aux leading dimension not a
 *     multiple of 8 or under D's rows (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD),
 *     an aux type (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE) other than
 *     D's ("the same as the type of elements of the output matrix", the
 *     exceptions being fp8 kernels), an epilogue's pointer missing:
 *     INVALID_VALUE;
 *   - operand shapes that do not chain, a leading dimension under the rows,
 *     a batch count that differs, or C == D (in place) with another leading
 *     dimension or batch stride for C than for D: INVALID_VALUE;
 *   - a matmul whose pointers are less aligned than the heuristic was told
 *     (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES, 256 when unset) or than
 *     the bias / aux pointers the heuristic saw ("Routines that don't
 *     dereference this pointer, like cublasLtMatmulAlgoGetHeuristic() depend
 *     on its value to determine expected pointer alignment"), or with another
 *     epilogue than the algorithm's: INVALID_VALUE, where a GPU would fault
 *     or compute garbage.
 * Where the preference allows it, a 16-bit D gets a split-K algorithm that
 * rounds its partial sums to D's type (split_in_output_type), as the INPLACE
 * and OUTPUT_TYPE reduction schemes do.
 * WF_EMU_LT_REFUSE=bias: the heuristic finds no algorithm for any bias
 * epilogue, =gelu: none for the GELU ones, =dgelu: none for DGELU (as for
 * some shapes and compute types on a GPU), so the tests reach gemm.cu's
 * fallbacks.
 *
 * The product runs on the emulated device (wf_emu::enqueue_on: stream order,
 * captured by a CUDA graph capture): products of the operands read as floats
 * (rounded to bf16 / fp16 under the FAST_16BF / FAST_16F compute types, as
 * the library's down-conversion) summed in double, alpha and beta * C made a
 * float, the bias added in float, then the GELU (the aux matrix gets its
 * input) or DGELU's gelu'(aux) times the value, stored in D's type rounded
 * to nearest even: emu_gemm.cc's formula. */
#include <cublasLt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gelu_value.h"
#include "precision_bits.h"

namespace {

struct Desc {
    cublasComputeType_t compute;
    cudaDataType_t scale;
    int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
    uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    const void *bias = nullptr;
    int32_t bias_type = -1; /* -1: D's type */
    void *aux = nullptr;
    int64_t aux_ld = 0;
    int32_t aux_type = -1; /* -1: D's type */
};

struct Layout {
    cudaDataType_t type;
    uint64_t rows, cols;
    int64_t ld;
    int32_t batch = 1;
    int64_t stride = 0;
};

struct Pref {
    uint64_t workspace = 0;
    uint32_t align[4] = { 256, 256, 256, 256 }; /* A, B, C, D */
    uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_MASK;
};

/* what an algorithm of this fake records (cublasLtMatmulAlgo_t's 8 words);
 * ALGO_EPILOGUE's high half: split-K in D's type (see split_in_output_type) */
enum { ALGO_MAGIC, ALGO_EPILOGUE, ALGO_A, ALGO_B, ALGO_C, ALGO_D, ALGO_BIAS, ALGO_AUX };
const uint64_t SPLIT = 1ull << 32;
const uint64_t MAGIC = 0x6c74656d75ull; /* "ltemu" */

Desc *desc_of(cublasLtMatmulDesc_t d) { return reinterpret_cast<Desc *>(d); }
Layout *layout_of(cublasLtMatrixLayout_t l) { return reinterpret_cast<Layout *>(l); }
Pref *pref_of(cublasLtMatmulPreference_t p) { return reinterpret_cast<Pref *>(p); }

/* the largest power of two (<= 256) dividing the address, as gemm.cu computes it */
uint32_t alignment_of(const void *p) {
    uintptr_t a = (uintptr_t)p;
    if (!a) return 256;
    a &= ~a + 1;
    return a > 256 ? 256 : (uint32_t)a;
}

/* copies an attribute of type T, if the buffer has T's size */
template <class T> cublasStatus_t take(T *into, const void *buf, size_t bytes) {
    if (!buf || bytes != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(into, buf, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}

bool has_bias(uint32_t e) { return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS; }
bool has_gelu(uint32_t e) { return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS; }
bool has_dgelu(uint32_t e) { return e == CUBLASLT_EPILOGUE_DGELU; }
bool has_aux(uint32_t e) { return has_gelu(e) || has_dgelu(e); }
bool is16(cudaDataType_t t) { return t == CUDA_R_16BF || t == CUDA_R_16F; }

/* the cublasLtMatmul() type table's rows that gemm.cu uses */
bool supported_types(const Desc &d, cudaDataType_t a, cudaDataType_t b, cudaDataType_t c, cudaDataType_t dd) {
    if (d.scale != CUDA_R_32F || c != dd || a != b) return false;
    switch (d.compute) {
    case CUBLAS_COMPUTE_32F:
        return (a == CUDA_R_32F && c == CUDA_R_32F) || (is16(a) && (c == a || c == CUDA_R_32F));
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_TF32: return a == CUDA_R_32F && c == CUDA_R_32F;
    default: return false;
    }
}

bool refused(const char *what) {
    const char *r = getenv("WF_EMU_LT_REFUSE");
    return r && strcmp(r, what) == 0;
}

/* op(X)'s rows and columns */
void op_dims(const Layout &l, int32_t trans, uint64_t *rows, uint64_t *cols) {
    *rows = trans == CUBLAS_OP_N ? l.rows : l.cols;
    *cols = trans == CUBLAS_OP_N ? l.cols : l.rows;
}

/* the rules that need no pointers: INVALID_VALUE, NOT_SUPPORTED or SUCCESS */
cublasStatus_t check_problem(const Desc &d, const Layout &a, const Layout &b, const Layout &c, const Layout &dd) {
    if (!supported_types(d, a.type, b.type, c.type, dd.type)) return CUBLAS_STATUS_NOT_SUPPORTED;
    uint64_t am, ak, bk, bn;
    op_dims(a, d.transa, &am, &ak);
    op_dims(b, d.transb, &bk, &bn);
    if (ak != bk || am != dd.rows || bn != dd.cols) return CUBLAS_STATUS_INVALID_VALUE;
    if (c.rows != dd.rows || c.cols != dd.cols) return CUBLAS_STATUS_INVALID_VALUE;
    for (const Layout *l : { &a, &b, &c, &dd })
        if (l->ld < (int64_t)l->rows || l->batch != dd.batch) return CUBLAS_STATUS_INVALID_VALUE;
    if (d.epilogue != CUBLASLT_EPILOGUE_DEFAULT && !has_bias(d.epilogue) && !has_aux(d.epilogue))
        return CUBLAS_STATUS_NOT_SUPPORTED; /* not emulated */
    if (has_bias(d.epilogue) && (!d.bias || (d.bias_type != -1 && d.bias_type != (int32_t)dd.type)))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (has_aux(d.epilogue) && (!d.aux || d.aux_ld % 8 != 0 || d.aux_ld < (int64_t)dd.rows ||
                                (d.aux_type != -1 && d.aux_type != (int32_t)dd.type)))
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

float load(const void *p, cudaDataType_t t, long i) {
    if (t == CUDA_R_32F) return static_cast<const float *>(p)[i];
    uint16_t h = static_cast<const uint16_t *>(p)[i];
    return t == CUDA_R_16BF ? wf_hd_bf16_value(h) : wf_hd_fp16_value(h);
}

void store(void *p, cudaDataType_t t, long i, float v) {
    if (t == CUDA_R_32F) static_cast<float *>(p)[i] = v;
    else static_cast<uint16_t *>(p)[i] = t == CUDA_R_16BF ? wf_hd_bf16_bits(v) : wf_hd_fp16_bits(v);
}

/* x rounded to a value of type t */
float round_to(cudaDataType_t t, float x) {
    if (t == CUDA_R_16BF) return wf_hd_bf16_value(wf_hd_bf16_bits(x));
    if (t == CUDA_R_16F) return wf_hd_fp16_value(wf_hd_fp16_bits(x));
    return x;
}

/* Whether the heuristic answers with a split-K algorithm that adds its two
 * partial products in D's type (cublasLt.h: REDUCTION_SCHEME_INPLACE reduces
 * "using the output buffer (and output data type)", OUTPUT_TYPE stores
 * "intermediate results in output type"): wherever the preference's
 * CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK lets it (the default lets
 * every scheme) and D is 16-bit, with the default epilogue (the worst case
 * a GPU's heuristic may pick; here the two halves of K). */
bool split_in_output_type(const Pref &p, const Layout &dl, const Desc &d) {
    uint32_t rounding = CUBLASLT_REDUCTION_SCHEME_INPLACE | CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE;
    return (p.reductions & rounding) != 0 && is16(dl.type) && d.epilogue == CUBLASLT_EPILOGUE_DEFAULT;
}

/* an fp32 operand as the FAST_16BF / FAST_16F compute types take it */
float operand(cublasComputeType_t compute, float x) {
    if (compute == CUBLAS_COMPUTE_32F_FAST_16BF) return wf_hd_bf16_value(wf_hd_bf16_bits(x));
    if (compute == CUBLAS_COMPUTE_32F_FAST_16F) return wf_hd_fp16_value(wf_hd_fp16_bits(x));
    return x;
}

/* element (i, j) of op(X), column-major with leading dimension ld */
long at(const Layout &l, int32_t trans, long batch, uint64_t i, uint64_t j) {
    long r = trans == CUBLAS_OP_N ? (long)i : (long)j, c = trans == CUBLAS_OP_N ? (long)j : (long)i;
    return batch * l.stride + r + c * l.ld;
}

}  // namespace

extern "C" {

const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS (another)";
    }
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
    static int handle;
    *h = reinterpret_cast<cublasLtHandle_t>(&handle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute, cudaDataType_t scale) {
    Desc *n = new Desc();
    n->compute = compute;
    n->scale = scale;
    *d = reinterpret_cast<cublasLtMatmulDesc_t>(n);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
    delete desc_of(d);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t md, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t bytes) {
    Desc *d = desc_of(md);
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA: return take(&d->transa, buf, bytes);
    case CUBLASLT_MATMUL_DESC_TRANSB: return take(&d->transb, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return take(&d->epilogue, buf, bytes);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return take(&d->bias, buf, bytes);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return take(&d->bias_type, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: return take(&d->aux, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: return take(&d->aux_ld, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE: return take(&d->aux_type, buf, bytes);
    default: return CUBLAS_STATUS_NOT_SUPPORTED; /* not emulated */
    }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
    Layout *n = new Layout();
    n->type = type, n->rows = rows, n->cols = cols, n->ld = ld;
    *l = reinterpret_cast<cublasLtMatrixLayout_t>(n);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
    delete layout_of(l);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t ml, cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t bytes) {
    Layout *l = layout_of(ml);
    switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return take(&l->batch, buf, bytes);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return take(&l->stride, buf, bytes);
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
    *p = reinterpret_cast<cublasLtMatmulPreference_t>(new Pref());
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
    delete pref_of(p);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t mp,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                                    size_t bytes) {
    Pref *p = pref_of(mp);
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: return take(&p->workspace, buf, bytes);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: return take(&p->align[0], buf, bytes);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: return take(&p->align[1], buf, bytes);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: return take(&p->align[2], buf, bytes);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: return take(&p->align[3], buf, bytes);
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK: return take(&p->reductions, buf, bytes);
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t md, cublasLtMatrixLayout_t la,
                                              cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                                              cublasLtMatrixLayout_t ld, cublasLtMatmulPreference_t mp,
                                              int requested, cublasLtMatmulHeuristicResult_t results[],
                                              int *found) {
    const Desc &d = *desc_of(md);
    *found = 0;
    if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
    cublasStatus_t st = check_problem(d, *layout_of(la), *layout_of(lb), *layout_of(lc), *layout_of(ld));
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if ((has_bias(d.epilogue) && refused("bias")) || (has_gelu(d.epilogue) && refused("gelu")) ||
        (has_dgelu(d.epilogue) && refused("dgelu")))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    cublasLtMatmulHeuristicResult_t &r = results[0];
    memset(&r, 0, sizeof r);
    const Pref &p = *pref_of(mp);
    uint64_t *w = r.algo.data;
    w[ALGO_MAGIC] = MAGIC;
    w[ALGO_EPILOGUE] = d.epilogue | (split_in_output_type(p, *layout_of(ld), d) ? SPLIT : 0);
    for (int k = 0; k < 4; k++) w[ALGO_A + k] = p.align[k];
    w[ALGO_BIAS] = has_bias(d.epilogue) ? alignment_of(d.bias) : 1;
    w[ALGO_AUX] = has_aux(d.epilogue) ? alignment_of(d.aux) : 1;
    r.workspaceSize = 0;
    r.state = CUBLAS_STATUS_SUCCESS;
    r.wavesCount = 1.0f;
    *found = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t md, const void *alpha_p, const void *A,
                              cublasLtMatrixLayout_t mla, const void *B, cublasLtMatrixLayout_t mlb,
                              const void *beta_p, const void *C, cublasLtMatrixLayout_t mlc, void *D,
                              cublasLtMatrixLayout_t mld, const cublasLtMatmulAlgo_t *algo, void *, size_t,
                              cudaStream_t stream) {
    const Desc d = *desc_of(md); /* the values of this call: a capture keeps them */
    const Layout a = *layout_of(mla), b = *layout_of(mlb), c = *layout_of(mlc), dl = *layout_of(mld);
    if (!algo || algo->data[ALGO_MAGIC] != MAGIC || (uint32_t)algo->data[ALGO_EPILOGUE] != d.epilogue)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (check_problem(d, a, b, c, dl) != CUBLAS_STATUS_SUCCESS) return CUBLAS_STATUS_INVALID_VALUE;
    if (C == D && (c.ld != dl.ld || c.stride != dl.stride)) return CUBLAS_STATUS_INVALID_VALUE;
    const void *ptr[6] = { A, B, C, D, has_bias(d.epilogue) ? d.bias : nullptr, has_aux(d.epilogue) ? d.aux : nullptr };
    for (int k = 0; k < 6; k++)
        if (ptr[k] && alignment_of(ptr[k]) < algo->data[ALGO_A + k]) return CUBLAS_STATUS_INVALID_VALUE;
    float alpha = *static_cast<const float *>(alpha_p), beta = *static_cast<const float *>(beta_p);
    bool split = algo->data[ALGO_EPILOGUE] & SPLIT;
    wf_emu::enqueue_on(stream, [=] {
        uint64_t m = dl.rows, n = dl.cols, k = d.transa == CUBLAS_OP_N ? a.cols : a.rows;
        cudaDataType_t bias_type = d.bias_type == -1 ? dl.type : (cudaDataType_t)d.bias_type;
        for (long q = 0; q < dl.batch; q++)
            for (uint64_t i = 0; i < m; i++)
                for (uint64_t j = 0; j < n; j++) {
                    double s = 0.0, part = 0.0;
                    for (uint64_t e = 0; e < k; e++) {
                        part += (double)operand(d.compute, load(A, a.type, at(a, d.transa, q, i, e))) *
                                operand(d.compute, load(B, b.type, at(b, d.transb, q, e, j)));
                        if (split && (e == k / 2 - 1 || e == k - 1)) { /* a partial sum, in D's type */
                            s = round_to(dl.type, (float)(s + round_to(dl.type, (float)part)));
                            part = 0.0;
                        }
                    }
                    s += part;
                    long out = at(dl, CUBLAS_OP_N, q, i, j);
                    float v = beta == 0.0f ? (float)(alpha * s)
                                           : (float)(alpha * s + (double)beta * load(C, c.type, at(c, CUBLAS_OP_N, q, i, j)));
                    if (has_bias(d.epilogue)) v += load(d.bias, bias_type, (long)i);
                    long aux_at = q * dl.stride + (long)i + (long)j * d.aux_ld;
                    if (has_gelu(d.epilogue)) {
                        store(d.aux, dl.type, aux_at, v);
                        v = wf_gelu_value(v);
                    }
                    if (has_dgelu(d.epilogue)) v = wf_gelu_grad(load(d.aux, dl.type, aux_at)) * v;
                    store(D, dl.type, out, v);
                }
    });
    return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
