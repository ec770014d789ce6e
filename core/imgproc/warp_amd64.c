// warpRow3 of warpcv.go in C with SSE2 (the x86-64 floor): a pixel's four
// neighbours mixed for its three channels by two pmaddwd. The weights are
// OpenCV's divided by 32 (each is a multiple of 32, and 32768 does not fit
// a 16-bit lane): (32·S + 2^14) >> 15 equals (S + 2^9) >> 10.
#include <emmintrin.h>
#include <stdint.h>

#include "warp.h"

enum { FFW_INTER = 5, FFW_TAB = 1 << FFW_INTER, FFW_AB = 10 };

void ffwarp_row3(uint8_t *row, const uint8_t *src, long src_len, int sh, int sw, int32_t x0, int32_t y0,
                 const int32_t *adelta, const int32_t *bdelta, int dw, const uint8_t *fill) {
	const long stride = 3 * (long)sw;
	const __m128i zero = _mm_setzero_si128(), half = _mm_set1_epi32(1 << 9);
	for (int x = 0; x < dw; x++) {
		int32_t X = (x0 + adelta[x]) >> (FFW_AB - FFW_INTER);
		int32_t Y = (y0 + bdelta[x]) >> (FFW_AB - FFW_INTER);
		int32_t sx = X >> FFW_INTER, sy = Y >> FFW_INTER;
		int32_t ax = X & (FFW_TAB - 1), ay = Y & (FFW_TAB - 1);
		int32_t w0 = (FFW_TAB - ay) * (FFW_TAB - ax), w1 = (FFW_TAB - ay) * ax;
		int32_t w2 = ay * (FFW_TAB - ax), w3 = ay * ax;
		uint8_t *o = row + 3 * x;
		long i = sy * stride + 3 * (long)sx;
		if ((uint32_t)sx < (uint32_t)(sw - 1) && (uint32_t)sy < (uint32_t)(sh - 1) && i + stride + 8 <= src_len) {
			// p0..p5 and q0..q5 as 16-bit lanes, paired (c, c+3): (p0 p3)(p1 p4)(p2 p5).
			__m128i p = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(src + i)), zero);
			__m128i q = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(src + i + stride)), zero);
			p = _mm_unpacklo_epi16(p, _mm_srli_si128(p, 6));
			q = _mm_unpacklo_epi16(q, _mm_srli_si128(q, 6));
			__m128i s = _mm_add_epi32(_mm_madd_epi16(p, _mm_set1_epi32(w0 | w1 << 16)),
			                          _mm_madd_epi16(q, _mm_set1_epi32(w2 | w3 << 16)));
			s = _mm_srai_epi32(_mm_add_epi32(s, half), 10);
			uint32_t v = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(s, zero), zero));
			o[0] = (uint8_t)v, o[1] = (uint8_t)(v >> 8), o[2] = (uint8_t)(v >> 16);
			continue;
		}
		if (sx >= sw || sx + 1 < 0 || sy >= sh || sy + 1 < 0) {
			o[0] = fill[0], o[1] = fill[1], o[2] = fill[2];
			continue;
		}
		// On the border (or the image's last bytes): neighbours outside read fill.
		for (int c = 0; c < 3; c++) {
			int32_t n[4];
			for (int k = 0; k < 4; k++) {
				int32_t xx = sx + (k & 1), yy = sy + (k >> 1);
				n[k] = xx >= 0 && yy >= 0 && xx < sw && yy < sh ? src[yy * stride + 3 * xx + c] : fill[c];
			}
			int32_t v = (n[0] * w0 + n[1] * w1 + n[2] * w2 + n[3] * w3 + (1 << 9)) >> 10;
			o[c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
		}
	}
}
