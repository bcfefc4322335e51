/* host_device.h: WF_HD marks an inline function that both the host code and
 * CUDA device code compile (__host__ __device__ under nvcc, nothing in C), so
 * the two backends evaluate one expression (precision_bits.h, gelu_value.h,
 * rope_value.h). */
#ifndef WEFT_HOST_DEVICE_H
#define WEFT_HOST_DEVICE_H

#if defined(__CUDACC__)
#define WF_HD __host__ __device__
#else
#define WF_HD
#endif

#endif
