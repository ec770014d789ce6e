// The SIMD resize kernels of resize_amd64.c (ffresize_: core/jpeg's ffr_
// is its region cutter).
#ifndef RESIZE_AMD64_H
#define RESIZE_AMD64_H

#include <stdint.h>

void ffresize_area_run(int avx2, uint8_t *dst, int dw, int dh, const uint8_t *src, long stride,
                       const int32_t *xfirst, const float *xw, int xn,
                       const int32_t *yfirst, const int32_t *yoff, const float *yw,
                       long src_len, float *buf, float *sum, float *wx);

void ffresize_linear_run(int avx2, uint8_t *dst, int dw, int dh, const uint8_t *src, int sh, long stride,
                         const int32_t *xofs, const int16_t *xa, const int32_t *yofs, const int16_t *ya,
                         long src_len, int32_t *r0, int32_t *r1);

#endif
