// The C resize kernels for 3-channel images: resize_amd64.c (SSE2, and AVX2
// when avx2 is set) and resize_arm64.c (NEON, which ignores avx2). Both
// reproduce the Go code of area.go and area_linear.go byte for byte. The
// prefix ffresize_ keeps them apart from core/jpeg's region cutter (ffr_).
#ifndef FFRESIZE_H
#define FFRESIZE_H

#include <stdint.h>

void ffresize_area_run(int avx2, uint8_t *dst, int dw, int dh, const uint8_t *src, long stride,
                       const int32_t *xfirst, const float *xw, int xn,
                       const int32_t *yfirst, const int32_t *yoff, const float *yw,
                       long src_len, float *buf, float *sum, float *wx);

void ffresize_linear_run(int avx2, uint8_t *dst, int dw, int dh, const uint8_t *src, int sh, long stride,
                         const int32_t *xofs, const int16_t *xa, const int32_t *yofs, const int16_t *ya,
                         long src_len, int32_t *r0, int32_t *r1);

#endif
