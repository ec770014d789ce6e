// warpRow3 of warpcv.go in C with SSE2 (the x86-64 floor): a pixel's four
// neighbours mixed for its three channels by two pmaddwd. The weights are
// OpenCV's divided by 32 (each is a multiple of 32, and 32768 does not fit
// a 16-bit lane): (32·S + 2^14) >> 15 equals (S + 2^9) >> 10.
#include <immintrin.h>
#include <stdint.h>

#include "warp.h"
#include "avx2.h"

enum { FFW_INTER = 5, FFW_TAB = 1 << FFW_INTER, FFW_AB = 10 };

// One pixel's three channels from its neighbours p (row sy) and q (row
// sy+1), 8 bytes readable at each, with the weights paired as 16-bit lanes:
// w01 = w0 | w1 << 16, w23 = w2 | w3 << 16. The channels in the low 3 bytes.
static inline uint32_t ffwarp_mix(const uint8_t *p, const uint8_t *q, __m128i w01, __m128i w23) {
	const __m128i zero = _mm_setzero_si128();
	__m128i a = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)p), zero);
	__m128i b = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)q), zero);
	// (c, c+3) paired: (p0 p3)(p1 p4)(p2 p5).
	a = _mm_unpacklo_epi16(a, _mm_srli_si128(a, 6));
	b = _mm_unpacklo_epi16(b, _mm_srli_si128(b, 6));
	__m128i s = _mm_add_epi32(_mm_madd_epi16(a, w01), _mm_madd_epi16(b, w23));
	s = _mm_srai_epi32(_mm_add_epi32(s, _mm_set1_epi32(1 << 9)), 10);
	return (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(s, zero), zero));
}

// ffwarp_px is output pixel x of the row, one at a time.
static inline void ffwarp_px(uint8_t *row, const uint8_t *src, long src_len, int sh, int sw, int32_t x0,
                             int32_t y0, const int32_t *adelta, const int32_t *bdelta, int x, const uint8_t *fill) {
	const long stride = 3 * (long)sw;
	int32_t X = (x0 + adelta[x]) >> (FFW_AB - FFW_INTER);
	int32_t Y = (y0 + bdelta[x]) >> (FFW_AB - FFW_INTER);
	int32_t sx = X >> FFW_INTER, sy = Y >> FFW_INTER;
	int32_t ax = X & (FFW_TAB - 1), ay = Y & (FFW_TAB - 1);
	int32_t w0 = (FFW_TAB - ay) * (FFW_TAB - ax), w1 = (FFW_TAB - ay) * ax;
	int32_t w2 = ay * (FFW_TAB - ax), w3 = ay * ax;
	uint8_t *o = row + 3 * x;
	long i = sy * stride + 3 * (long)sx;
	if ((uint32_t)sx < (uint32_t)(sw - 1) && (uint32_t)sy < (uint32_t)(sh - 1) && i + stride + 8 <= src_len) {
		uint32_t v = ffwarp_mix(src + i, src + i + stride, _mm_set1_epi32(w0 | w1 << 16),
		                        _mm_set1_epi32(w2 | w3 << 16));
		o[0] = (uint8_t)v, o[1] = (uint8_t)(v >> 8), o[2] = (uint8_t)(v >> 16);
		return;
	}
	if (sx >= sw || sx + 1 < 0 || sy >= sh || sy + 1 < 0) {
		o[0] = fill[0], o[1] = fill[1], o[2] = fill[2];
		return;
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

static void ffwarp_row3_sse2(uint8_t *row, const uint8_t *src, long src_len, int sh, int sw, int32_t x0, int32_t y0,
                             const int32_t *adelta, const int32_t *bdelta, int dw, const uint8_t *fill) {
	for (int x = 0; x < dw; x++) {
		ffwarp_px(row, src, src_len, sh, sw, x0, y0, adelta, bdelta, x, fill);
	}
}

FF_AVX2_BEGIN

#include "store24.h"

// Two pixels, k (low 128-bit half) and k+1 (high half): their neighbours
// in rows sy (at src+o[k]) and sy+1 as 16-bit lanes with each channel
// paired with the next pixel's (c, c+3), mixed by their own weights
// (w01, w23 permuted to each half by idx). The channels, as 32-bit lanes
// 0-2 of each half.
static inline __m256i ffwarp_mix2(const uint8_t *src, long stride, const int32_t *o, int k, __m256i w01,
                                  __m256i w23, __m256i idx) {
	const __m256i pair = _mm256_setr_epi8(0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11, 12, 13, 14, 15,
	                                      0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11, 12, 13, 14, 15);
	const uint8_t *p = src + o[k], *q = src + o[k + 1];
	__m256i top = _mm256_cvtepu8_epi16(_mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)p),
	                                                      _mm_loadl_epi64((const __m128i *)q)));
	__m256i bot = _mm256_cvtepu8_epi16(_mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(p + stride)),
	                                                      _mm_loadl_epi64((const __m128i *)(q + stride))));
	top = _mm256_shuffle_epi8(top, pair);
	bot = _mm256_shuffle_epi8(bot, pair);
	__m256i sum = _mm256_add_epi32(_mm256_madd_epi16(top, _mm256_permutevar8x32_epi32(w01, idx)),
	                               _mm256_madd_epi16(bot, _mm256_permutevar8x32_epi32(w23, idx)));
	return _mm256_srai_epi32(_mm256_add_epi32(sum, _mm256_set1_epi32(1 << 9)), 10);
}

// Eight pixels whose neighbours are all inside: each pixel's channels in
// the low three bytes of 32-bit lane k.
static inline __m256i ffwarp_mix8(const uint8_t *src, long stride, const int32_t *o, __m256i w01, __m256i w23) {
	__m256i s01 = ffwarp_mix2(src, stride, o, 0, w01, w23, _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
	__m256i s23 = ffwarp_mix2(src, stride, o, 2, w01, w23, _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3));
	__m256i s45 = ffwarp_mix2(src, stride, o, 4, w01, w23, _mm256_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5));
	__m256i s67 = ffwarp_mix2(src, stride, o, 6, w01, w23, _mm256_setr_epi32(6, 6, 6, 6, 7, 7, 7, 7));
	// Halves: low p0 p2 p4 p6, high p1 p3 p5 p7 (4 bytes each); then in order.
	__m256i b = _mm256_packus_epi16(_mm256_packs_epi32(s01, s23), _mm256_packs_epi32(s45, s67));
	return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// The 24 bytes of eight pixels from the low three bytes of each 32-bit lane.
static inline void ffwarp_store8(uint8_t *d, __m256i px) {
	const __m256i squeeze = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1,
	                                         0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
	ff_store24(d, _mm256_shuffle_epi8(px, squeeze));
}


// Eight pixels at a time: their coordinates, weights and offsets in AVX2
// lanes; where all eight have their neighbours inside the image, each is
// mixed by ffwarp_mix, else they go one by one.
static void ffwarp_row3_avx2(uint8_t *row, const uint8_t *src, long src_len, int sh, int sw, int32_t x0, int32_t y0,
                             const int32_t *adelta, const int32_t *bdelta, int dw, const uint8_t *fill) {
	const long stride = 3 * (long)sw;
	int x = 0;
	if (src_len + stride < (1L << 31)) { // offsets in 32-bit lanes
		const __m256i vx0 = _mm256_set1_epi32(x0), vy0 = _mm256_set1_epi32(y0), m31 = _mm256_set1_epi32(FFW_TAB - 1);
		const __m256i tab = _mm256_set1_epi32(FFW_TAB), three = _mm256_set1_epi32(3);
		const __m256i vstride = _mm256_set1_epi32((int32_t)stride);
		const __m256i xmax = _mm256_set1_epi32(sw - 1), ymax = _mm256_set1_epi32(sh - 1);
		const __m256i lim = _mm256_set1_epi32((int32_t)(src_len - stride - 7)), neg1 = _mm256_set1_epi32(-1);
		for (; x + 8 <= dw; x += 8) {
			__m256i X = _mm256_srai_epi32(_mm256_add_epi32(vx0, _mm256_loadu_si256((const __m256i *)(adelta + x))),
			                              FFW_AB - FFW_INTER);
			__m256i Y = _mm256_srai_epi32(_mm256_add_epi32(vy0, _mm256_loadu_si256((const __m256i *)(bdelta + x))),
			                              FFW_AB - FFW_INTER);
			__m256i sx = _mm256_srai_epi32(X, FFW_INTER), sy = _mm256_srai_epi32(Y, FFW_INTER);
			__m256i off = _mm256_add_epi32(_mm256_mullo_epi32(sy, vstride), _mm256_mullo_epi32(sx, three));
			// Inside: 0 <= sx < sw-1, 0 <= sy < sh-1, and 8 bytes readable past row sy+1's pixel.
			__m256i ok = _mm256_and_si256(_mm256_cmpgt_epi32(sx, neg1), _mm256_cmpgt_epi32(sy, neg1));
			ok = _mm256_and_si256(ok, _mm256_cmpgt_epi32(xmax, sx));
			ok = _mm256_and_si256(ok, _mm256_cmpgt_epi32(ymax, sy));
			ok = _mm256_and_si256(ok, _mm256_cmpgt_epi32(lim, off));
			if (_mm256_movemask_epi8(ok) != -1) {
				for (int k = 0; k < 8; k++) {
					ffwarp_px(row, src, src_len, sh, sw, x0, y0, adelta, bdelta, x + k, fill);
				}
				continue;
			}
			__m256i ax = _mm256_and_si256(X, m31), ay = _mm256_and_si256(Y, m31);
			__m256i nax = _mm256_sub_epi32(tab, ax), nay = _mm256_sub_epi32(tab, ay);
			__m256i w01 = _mm256_or_si256(_mm256_mullo_epi32(nay, nax), _mm256_slli_epi32(_mm256_mullo_epi32(nay, ax), 16));
			__m256i w23 = _mm256_or_si256(_mm256_mullo_epi32(ay, nax), _mm256_slli_epi32(_mm256_mullo_epi32(ay, ax), 16));
			int32_t o[8];
			_mm256_storeu_si256((__m256i *)o, off);
			ffwarp_store8(row + 3 * x, ffwarp_mix8(src, stride, o, w01, w23));
		}
	}
	for (; x < dw; x++) {
		ffwarp_px(row, src, src_len, sh, sw, x0, y0, adelta, bdelta, x, fill);
	}
}

FF_AVX2_END

void ffwarp_row3(int avx2, uint8_t *row, const uint8_t *src, long src_len, int sh, int sw, int32_t x0, int32_t y0,
                 const int32_t *adelta, const int32_t *bdelta, int dw, const uint8_t *fill) {
	(avx2 ? ffwarp_row3_avx2 : ffwarp_row3_sse2)(row, src, src_len, sh, sw, x0, y0, adelta, bdelta, dw, fill);
}
