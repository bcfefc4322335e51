/* convert16.h: bulk conversions between floats and the plan's 16-bit type
 * on the host (convert16.c), shared by the 16-bit arenas (param16.c, and
 * through the CPU backend's hooks grad16.c). */
#ifndef WEFT_CONVERT16_H
#define WEFT_CONVERT16_H

#include <stdint.h>

/* dst[i] = src[i]'s value (precision: WF_BF16, else fp16) */
void wf_widen16(int precision, float *dst, const uint16_t *src, long n);
/* dst[i] = src[i] rounded to the type, ties to even, as bits */
void wf_narrow16(int precision, uint16_t *dst, const float *src, long n);
/* x's first n 16-bit values (its first half) widened into its n floats */
void wf_widen16_in_place(int precision, float *x, long n);
/* dst[i] = (dst[i]'s value + src[i]) rounded to the type, ties to even */
void wf_add_into16(int precision, uint16_t *dst, const float *src, long n);

#endif
