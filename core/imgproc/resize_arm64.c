// NEON resize kernels for 3-channel images on arm64: the SSE2 kernels of
// resize_kern.h rewritten with NEON intrinsics, one pixel (3 channels and a
// spare lane) per 128-bit vector.
//
// Every operation happens in the order the Go reference code (area.go,
// area_linear.go) performs it. arm64 has fused multiply-add, and C compilers
// contract a*b+c into one by default (GCC even across statements and
// intrinsics); one rounding instead of two would change bytes. NOFUSE puts
// each float product through an empty asm, which the compiler must treat as
// an opaque value, so no product can be fused into the add that follows.
#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "resize.h"

#define NOFUSE(v) __asm__("" : "+w"(v))

static inline float32x4_t mul_nofuse(float32x4_t a, float32x4_t b) {
	float32x4_t p = vmulq_f32(a, b);
	NOFUSE(p);
	return p;
}

// One pixel's 3 channels (and one byte of the next pixel, ignored) as floats.
static inline float32x4_t px_f32(const uint8_t *p) {
	uint32_t v;
	memcpy(&v, p, 4);
	return vcvtq_f32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vcreate_u8(v)))));
}

// Like px_f32 but reads the byte before p instead of the byte after it, so
// that the row's last pixel never reads past the row.
static inline float32x4_t px_f32_back(const uint8_t *p) {
	uint32_t v;
	memcpy(&v, p - 1, 4);
	return vcvtq_f32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vcreate_u8(v >> 8)))));
}

// area_hfilter box-filters one row: buf[3dx+c] = sum_k row[3(first[dx]+k)+c]*w[n dx+k],
// adding the products left to right as the Go code does. buf has room for
// one float more than dw*3.
static void area_hfilter(float *buf, const uint8_t *row, int dw, const int32_t *first, const float *w, int n) {
	for (int dx = 0; dx < dw; dx++) {
		const uint8_t *p = row + 3 * (long)first[dx];
		const float *ws = w + (long)n * dx;
		float32x4_t acc;
		if (n == 1) {
			acc = mul_nofuse(first[dx] > 0 ? px_f32_back(p) : px_f32(p), vdupq_n_f32(ws[0]));
		} else {
			acc = mul_nofuse(px_f32(p), vdupq_n_f32(ws[0]));
			for (int k = 1; k < n - 1; k++)
				acc = vaddq_f32(acc, mul_nofuse(px_f32(p + 3 * k), vdupq_n_f32(ws[k])));
			acc = vaddq_f32(acc, mul_nofuse(px_f32_back(p + 3 * (n - 1)), vdupq_n_f32(ws[n - 1])));
		}
		vst1q_f32(buf + 3 * dx, acc);
	}
}

// Round half to even and saturate to 0..255, as sat8.
static inline uint8_t round_u8(float v) {
	int32_t x = vcvtns_s32_f32(v);
	return (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x);
}

// store_u8_acc writes round(sum[i] + beta*buf[i]) (or of beta*buf[i] when
// sum is NULL), rounding half to even and saturating.
static inline void store_u8_acc(uint8_t *out, const float *sum, const float *buf, float beta, int len) {
	const float32x4_t b = vdupq_n_f32(beta);
	int i = 0;
	for (; i + 8 <= len; i += 8) {
		float32x4_t x0 = mul_nofuse(b, vld1q_f32(buf + i)), x1 = mul_nofuse(b, vld1q_f32(buf + i + 4));
		if (sum) {
			x0 = vaddq_f32(vld1q_f32(sum + i), x0);
			x1 = vaddq_f32(vld1q_f32(sum + i + 4), x1);
		}
		int16x8_t s = vcombine_s16(vqmovn_s32(vcvtnq_s32_f32(x0)), vqmovn_s32(vcvtnq_s32_f32(x1)));
		vst1_u8(out + i, vqmovun_s16(s));
	}
	for (; i < len; i++) {
		float v = beta * buf[i];
		NOFUSE(v);
		if (sum)
			v = sum[i] + v;
		out[i] = round_u8(v);
	}
}

// sum[i] = beta*buf[i] (first) or sum[i] += beta*buf[i].
static inline void accumulate(float *sum, const float *buf, float beta, int len, int first) {
	const float32x4_t b = vdupq_n_f32(beta);
	int i = 0;
	for (; i + 4 <= len; i += 4) {
		float32x4_t x = mul_nofuse(b, vld1q_f32(buf + i));
		vst1q_f32(sum + i, first ? x : vaddq_f32(vld1q_f32(sum + i), x));
	}
	for (; i < len; i++) {
		float v = beta * buf[i];
		NOFUSE(v);
		sum[i] = first ? v : sum[i] + v;
	}
}

// area_run is areaRun of area.go for 3 channels.
static void area_run(uint8_t *dst, int dw, int dh, const uint8_t *src, long stride,
                     const int32_t *xfirst, const float *xw, int xn,
                     const int32_t *yfirst, const int32_t *yoff, const float *yw,
                     float *buf, float *sum) {
	const int len = dw * 3;
	long cached = -1;
	for (int dy = 0; dy < dh; dy++) {
		const int sy0 = yfirst[dy];
		const int nk = yoff[dy + 1] - yoff[dy];
		const float *ws = yw + yoff[dy];
		for (int k = 0; k < nk; k++) {
			const long sy = sy0 + k;
			if (sy != cached) {
				area_hfilter(buf, src + sy * stride, dw, xfirst, xw, xn);
				cached = sy;
			}
			if (k == nk - 1) // the last row's products go straight to the output
				store_u8_acc(dst + (long)dy * len, k ? sum : NULL, buf, ws[k], len);
			else
				accumulate(sum, buf, ws[k], len, k == 0);
		}
	}
}

// linear_hrow resamples one row: buf[3dx+c] = row[3ofs[dx]+c]*a[2dx] +
// row[3ofs[dx]+3+c]*a[2dx+1], with ofs[dx]+1 < sw for every dx. buf has one
// spare int.
static void linear_hrow(int32_t *buf, const uint8_t *row, int dw, const int32_t *ofs, const int16_t *a) {
	for (int dx = 0; dx < dw; dx++) {
		const uint8_t *p = row + 3 * (long)ofs[dx];
		uint32_t v0, v1;
		memcpy(&v0, p, 4);     // R0 G0 B0 R1
		memcpy(&v1, p + 2, 4); // B0 R1 G1 B1: shifted down, R1 G1 B1 0
		int16x4_t x0 = vreinterpret_s16_u16(vget_low_u16(vmovl_u8(vcreate_u8(v0))));
		int16x4_t x1 = vreinterpret_s16_u16(vget_low_u16(vmovl_u8(vcreate_u8(v1 >> 8))));
		int32x4_t r = vmlal_n_s16(vmull_n_s16(x0, a[2 * dx]), x1, a[2 * dx + 1]);
		vst1q_s32(buf + 3 * dx, r);
	}
}

// linear_vrow is OpenCV's VResizeLinearVec_32s8u: the rows are 2048-scaled,
// the coefficients 11-bit; products keep their high 16 bits.
static void linear_vrow(uint8_t *out, const int32_t *s0, const int32_t *s1, int len, int16_t b0, int16_t b1) {
	const int32x4_t vb0 = vdupq_n_s32(b0), vb1 = vdupq_n_s32(b1);
	int i = 0;
	for (; i + 8 <= len; i += 8) {
		int32x4_t x[2];
		for (int h = 0; h < 2; h++) {
			int32x4_t a = vshrq_n_s32(vmulq_s32(vshrq_n_s32(vld1q_s32(s0 + i + 4 * h), 4), vb0), 16);
			int32x4_t b = vshrq_n_s32(vmulq_s32(vshrq_n_s32(vld1q_s32(s1 + i + 4 * h), 4), vb1), 16);
			x[h] = vshrq_n_s32(vaddq_s32(vaddq_s32(a, b), vdupq_n_s32(2)), 2);
		}
		vst1_u8(out + i, vqmovn_u16(vcombine_u16(vqmovun_s32(x[0]), vqmovun_s32(x[1]))));
	}
	for (; i < len; i++) {
		int x = (((s0[i] >> 4) * b0) >> 16) + (((s1[i] >> 4) * b1) >> 16);
		x = (x + 2) >> 2;
		out[i] = (uint8_t)(x > 255 ? 255 : x);
	}
}

// linear_run is linearRun of area_linear.go for 3 channels.
static void linear_run(uint8_t *dst, int dw, int dh, const uint8_t *src, int sh, long stride,
                       const int32_t *xofs, const int16_t *xa, const int32_t *yofs, const int16_t *ya,
                       int32_t *r0, int32_t *r1) {
	const int len = dw * 3;
	int32_t *rows[2] = {r0, r1};
	long have[2] = {-1, -1};
	for (int dy = 0; dy < dh; dy++) {
		const int sy = yofs[dy];
		/* sy is -1 above the first row (INTER_LINEAR's top edge) */
		const long y0 = sy < 0 ? 0 : (sy < sh - 1 ? sy : sh - 1);
		const long y1 = sy + 1 < sh - 1 ? sy + 1 : sh - 1;
		const int16_t b0 = ya[2 * dy], b1 = ya[2 * dy + 1];
		uint8_t *out = dst + (long)dy * len;
		if (dy > 0 && yofs[dy - 1] == sy && ya[2 * dy - 2] == b0 && ya[2 * dy - 1] == b1) {
			memcpy(out, out - len, len); // upscaling repeats rows
			continue;
		}
		if (have[0] != y0) {
			if (have[1] == y0) {
				int32_t *t = rows[0]; rows[0] = rows[1]; rows[1] = t;
				long h = have[0]; have[0] = have[1]; have[1] = h;
			} else {
				linear_hrow(rows[0], src + y0 * stride, dw, xofs, xa);
				have[0] = y0;
			}
		}
		const int32_t *s1 = rows[0];
		if (y1 != y0) {
			if (have[1] != y1) {
				linear_hrow(rows[1], src + y1 * stride, dw, xofs, xa);
				have[1] = y1;
			}
			s1 = rows[1];
		}
		linear_vrow(out, rows[0], s1, len, b0, b1);
	}
}

void ffresize_area_run(int avx2, uint8_t *dst, int dw, int dh, const uint8_t *src, long stride,
                       const int32_t *xfirst, const float *xw, int xn,
                       const int32_t *yfirst, const int32_t *yoff, const float *yw,
                       long src_len, float *buf, float *sum, float *wx) {
	(void)avx2, (void)src_len, (void)wx;
	area_run(dst, dw, dh, src, stride, xfirst, xw, xn, yfirst, yoff, yw, buf, sum);
}

void ffresize_linear_run(int avx2, uint8_t *dst, int dw, int dh, const uint8_t *src, int sh, long stride,
                         const int32_t *xofs, const int16_t *xa, const int32_t *yofs, const int16_t *ya,
                         long src_len, int32_t *r0, int32_t *r1) {
	(void)avx2, (void)src_len;
	linear_run(dst, dw, dh, src, sh, stride, xofs, xa, yofs, ya, r0, r1);
}
