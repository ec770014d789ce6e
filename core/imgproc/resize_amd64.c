// SIMD resize kernels for 3-channel images: an SSE2 variant (the x86-64
// floor) and the same code compiled for AVX2; Go picks one at run time.
#include <stdint.h>
#include <string.h>
#include <immintrin.h>

#include "avx2.h"
#include "resize.h"

#define KSUF _sse2
#include "resize_kern.h"
#undef KSUF

FF_AVX2_BEGIN

// tap_shuffle[k] moves bytes 3k, 3k+1 and 3k+2 of each 128-bit lane into the
// low bytes of its first three 32-bit elements and zeroes the rest.
static const union {
	int8_t b[32];
	__m256i v;
} tap_shuffle[5] = {
#define TAP(k) {{3 * k, -1, -1, -1, 3 * k + 1, -1, -1, -1, 3 * k + 2, -1, -1, -1, -1, -1, -1, -1, \
                 3 * k, -1, -1, -1, 3 * k + 1, -1, -1, -1, 3 * k + 2, -1, -1, -1, -1, -1, -1, -1}}
	TAP(0), TAP(1), TAP(2), TAP(3), TAP(4),
#undef TAP
};

// lin_shuffle pairs the channels of the two pixels at bytes 0-5 of each
// 128-bit lane as 16-bit values: R0 R1 G0 G1 B0 B1 0 0.
static const union {
	int8_t b[32];
	__m256i v;
} lin_shuffle = {{0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,
                  0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1}};

// lin_spread repeats 32-bit element 0 over the low lane, 1 over the high.
static const union {
	int32_t d[8];
	__m256i v;
} lin_spread = {{0, 0, 0, 0, 1, 1, 1, 1}};

#define KSUF _avx2
#define KAVX2 1
#include "resize_kern.h"
#undef KAVX2
#undef KSUF
FF_AVX2_END

void ffresize_area_run(int avx2, uint8_t *dst, int dw, int dh, const uint8_t *src, long stride,
                       const int32_t *xfirst, const float *xw, int xn,
                       const int32_t *yfirst, const int32_t *yoff, const float *yw,
                       long src_len, float *buf, float *sum, float *wx) {
	if (avx2)
		area_run_avx2(dst, dw, dh, src, stride, xfirst, xw, xn, yfirst, yoff, yw, src_len, buf, sum, wx);
	else
		area_run_sse2(dst, dw, dh, src, stride, xfirst, xw, xn, yfirst, yoff, yw, src_len, buf, sum, wx);
}

void ffresize_linear_run(int avx2, uint8_t *dst, int dw, int dh, const uint8_t *src, int sh, long stride,
                         const int32_t *xofs, const int16_t *xa, const int32_t *yofs, const int16_t *ya,
                         long src_len, int32_t *r0, int32_t *r1) {
	if (avx2)
		linear_run_avx2(dst, dw, dh, src, sh, stride, xofs, xa, yofs, ya, src_len, r0, r1);
	else
		linear_run_sse2(dst, dw, dh, src, sh, stride, xofs, xa, yofs, ya, src_len, r0, r1);
}
