// The HSV kernel for x86-64: the scalar code of hsv_kern.h, and an AVX2
// version that converts eight pixels at a time with the same arithmetic
// (1 - s·h in double, as the scalar code does it).
#include <immintrin.h>

#include "hsv_kern.h"
#include "avx2.h"

FF_AVX2_BEGIN

#include "store24.h"

// The caller's lookup tables folded into the fixed ones, as 32-bit
// entries grouped by what indexes them, so that one load per lane fetches
// a group: by v its division table entry and v's x/255, by hue its
// fractions and its sector's three picks (r | g << 2 | b << 4), by s its
// x/255.
typedef struct {
	int32_t sdiv;
	float unit;
} ffhsv_byv;
typedef struct {
	float frac, omf;
	int32_t pick, pad;
} ffhsv_byh;
typedef struct {
	ffhsv_byv v[256];
	ffhsv_byh h[256];
	float unit_s[256];
} ffhsv_wide;

static void ffhsv_widen(const ffhsv_tables *t, ffhsv_wide *w) {
	for (int i = 0; i < 256; i++) {
		w->v[i].sdiv = t->sdiv[i];
		w->v[i].unit = t->unit[t->lut_v[i]];
		w->unit_s[i] = t->unit[t->lut_s[i]];
		int hh = t->lut_h[i < 180 ? i : 0];
		const uint8_t *sec = t->sectors[t->sector[hh]];
		w->h[i] = (ffhsv_byh){t->frac[hh], t->omf[hh], sec[2] | sec[1] << 2 | sec[0] << 4, 0};
	}
}

// Eight table entries by index, loaded one by one: AVX2's gathers measured
// slower than this on the benchmark machine (Intel's GDS mitigation makes
// them microcoded).
static inline __m256i ffhsv_look(const int32_t *tab, __m256i idx) {
	int32_t i[8];
	_mm256_storeu_si256((__m256i *)i, idx);
	return _mm256_setr_epi32(tab[i[0]], tab[i[1]], tab[i[2]], tab[i[3]], tab[i[4]], tab[i[5]], tab[i[6]], tab[i[7]]);
}
static inline __m256 ffhsv_lookf(const float *tab, __m256i idx) {
	int32_t i[8];
	_mm256_storeu_si256((__m256i *)i, idx);
	return _mm256_setr_ps(tab[i[0]], tab[i[1]], tab[i[2]], tab[i[3]], tab[i[4]], tab[i[5]], tab[i[6]], tab[i[7]]);
}

// By v: both entries of eight lanes from eight 8-byte loads.
static inline void ffhsv_look_v(const ffhsv_byv *tab, __m256i v, __m256i *sdiv, __m256 *unit) {
	int32_t i[8];
	_mm256_storeu_si256((__m256i *)i, v);
#define FFHSV_BYV(a, b) _mm_castsi128_ps(_mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)&tab[i[a]]), \
	                                                       _mm_loadl_epi64((const __m128i *)&tab[i[b]])))
	__m256 lo = _mm256_set_m128(FFHSV_BYV(4, 5), FFHSV_BYV(0, 1)); // lanes 0 1 | 4 5, two values each
	__m256 hi = _mm256_set_m128(FFHSV_BYV(6, 7), FFHSV_BYV(2, 3)); // lanes 2 3 | 6 7
#undef FFHSV_BYV
	*sdiv = _mm256_castps_si256(_mm256_shuffle_ps(lo, hi, 0x88));
	*unit = _mm256_shuffle_ps(lo, hi, 0xdd);
}

// By hue: the three entries of eight lanes from eight 16-byte loads,
// transposed.
static inline void ffhsv_look_h(const ffhsv_byh *tab, __m256i h, __m256 *frac, __m256 *omf, __m256i *pick) {
	int32_t i[8];
	_mm256_storeu_si256((__m256i *)i, h);
#define FFHSV_BYH(k) _mm_loadu_ps((const float *)&tab[i[k]])
	__m256 a = _mm256_set_m128(FFHSV_BYH(4), FFHSV_BYH(0)), b = _mm256_set_m128(FFHSV_BYH(5), FFHSV_BYH(1));
	__m256 c = _mm256_set_m128(FFHSV_BYH(6), FFHSV_BYH(2)), d = _mm256_set_m128(FFHSV_BYH(7), FFHSV_BYH(3));
#undef FFHSV_BYH
	__m256 ab0 = _mm256_unpacklo_ps(a, b), ab1 = _mm256_unpackhi_ps(a, b);
	__m256 cd0 = _mm256_unpacklo_ps(c, d), cd1 = _mm256_unpackhi_ps(c, d);
	*frac = _mm256_shuffle_ps(ab0, cd0, 0x44);
	*omf = _mm256_shuffle_ps(ab0, cd0, 0xee);
	*pick = _mm256_castps_si256(_mm256_shuffle_ps(ab1, cd1, 0x44));
}

// 1 - s·f for eight lanes, each in double then rounded to float32.
static inline __m256 ffhsv_fnma8(__m256 s, __m256 f) {
	__m256d one = _mm256_set1_pd(1.0);
	__m256d lo = _mm256_sub_pd(one, _mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(s)),
	                                              _mm256_cvtps_pd(_mm256_castps256_ps128(f))));
	__m256d hi = _mm256_sub_pd(one, _mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(s, 1)),
	                                              _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1))));
	return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
}

// One of the four values per lane, by the 2-bit index in idx.
static inline __m256 ffhsv_pick(__m256i idx, __m256 t0, __m256 t1, __m256 t2, __m256 t3) {
	__m256 odd = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 31));
	__m256 high = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 30));
	return _mm256_blendv_ps(_mm256_blendv_ps(t0, t1, odd), _mm256_blendv_ps(t2, t3, odd), high);
}

// Eight pixels at p (24 bytes; 28 readable): the channels' bytes times 255
// before rounding, into out (r, g, b lanes).
static inline void ffhsv_pixels8(const uint8_t *p, const int32_t *hdiv, const ffhsv_wide *w, __m256 out[3]) {
	const __m256i take = _mm256_setr_epi8(0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1, -1, -1,
	                                      0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1, -1, -1);
	__m256i px = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(p + 12)), _mm_loadu_si128((const __m128i *)p));
	__m256i r = _mm256_shuffle_epi8(px, take);
	__m256i g = _mm256_shuffle_epi8(_mm256_srli_si256(px, 1), take);
	__m256i b = _mm256_shuffle_epi8(_mm256_srli_si256(px, 2), take);
	__m256i v = _mm256_max_epi32(r, _mm256_max_epi32(g, b));
	__m256i diff = _mm256_sub_epi32(v, _mm256_min_epi32(r, _mm256_min_epi32(g, b)));
	__m256i half = _mm256_set1_epi32(1 << 11);
	__m256i sdiv;
	__m256 vf;
	ffhsv_look_v(w->v, v, &sdiv, &vf);
	__m256i s = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(diff, sdiv), half), 12);
	__m256i mr = _mm256_cmpeq_epi32(v, r);
	__m256i mg = _mm256_andnot_si256(mr, _mm256_cmpeq_epi32(v, g));
	__m256i hr = _mm256_sub_epi32(g, b);
	__m256i hg = _mm256_add_epi32(_mm256_sub_epi32(b, r), _mm256_slli_epi32(diff, 1));
	__m256i hb = _mm256_add_epi32(_mm256_sub_epi32(r, g), _mm256_slli_epi32(diff, 2));
	__m256i h = _mm256_blendv_epi8(_mm256_blendv_epi8(hb, hg, mg), hr, mr);
	h = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(h, ffhsv_look(hdiv, diff)), half), 12);
	h = _mm256_add_epi32(h, _mm256_and_si256(_mm256_set1_epi32(180), _mm256_cmpgt_epi32(_mm256_setzero_si256(), h)));
	__m256 sf = ffhsv_lookf(w->unit_s, s);
	__m256 frac, omf;
	__m256i pick;
	ffhsv_look_h(w->h, h, &frac, &omf, &pick);
	__m256 t1 = _mm256_mul_ps(vf, _mm256_sub_ps(_mm256_set1_ps(1), sf));
	__m256 t2 = _mm256_mul_ps(vf, ffhsv_fnma8(sf, frac));
	__m256 t3 = _mm256_mul_ps(vf, ffhsv_fnma8(sf, omf));
	__m256 k = _mm256_set1_ps(255);
	out[0] = _mm256_mul_ps(ffhsv_pick(pick, vf, t1, t2, t3), k);
	out[1] = _mm256_mul_ps(ffhsv_pick(_mm256_srli_epi32(pick, 2), vf, t1, t2, t3), k);
	out[2] = _mm256_mul_ps(ffhsv_pick(_mm256_srli_epi32(pick, 4), vf, t1, t2, t3), k);
}

static void ffhsv_lut_avx2(uint8_t *img, long rows, int w, int block, const ffhsv_tables *t) {
	ffhsv_wide wide;
	ffhsv_widen(t, &wide);
	uint8_t *end = img + rows * 3 * (long)w;
	for (long y = 0; y < rows; y++) {
		uint8_t *row = img + y * 3 * (long)w;
		int x = 0;
		for (; x + 8 <= w && row + 3 * x + 28 <= end; x += 8) {
			uint8_t *p = row + 3 * x;
			// Eight pixels of one colour (a fill, a flat or clipped area;
			// the comparison also takes in the next pixel): one conversion.
			__m128i a = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)p), _mm_loadu_si128((const __m128i *)(p + 3)));
			__m128i b = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 8)), _mm_loadu_si128((const __m128i *)(p + 11)));
			if (_mm_movemask_epi8(_mm_and_si128(a, b)) == 0xffff) {
				ffhsv_run(p, 0, 1, x < block ? 1 : 0, t);
				for (int i = 1; i < 8; i++) {
					p[3 * i] = p[0], p[3 * i + 1] = p[1], p[3 * i + 2] = p[2];
				}
				continue;
			}
			__m256 c[3];
			ffhsv_pixels8(p, t->hdiv, &wide, c);
			__m256i n[3];
			for (int k = 0; k < 3; k++) {
				// Toward zero in the blocks, half to even after (the mode's
				// rounding); the packs below clamp to [0, 255].
				n[k] = x < block ? _mm256_cvttps_epi32(c[k]) : _mm256_cvtps_epi32(c[k]);
			}
			// Per 128-bit half: r0..3 g0..3 b0..3 as bytes, interleaved to
			// r0 g0 b0 r1 ... b3.
			__m256i bytes = _mm256_packus_epi16(_mm256_packus_epi32(n[0], n[1]),
			                                   _mm256_packus_epi32(n[2], _mm256_setzero_si256()));
			const __m256i weave = _mm256_setr_epi8(0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1,
			                                       0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1);
			ff_store24(p, _mm256_shuffle_epi8(bytes, weave));
		}
		ffhsv_run(row, x, w, block, t);
	}
}

FF_AVX2_END

void ffhsv_lut(int avx2, uint8_t *img, long rows, int w, int block, const ffhsv_tables *t) {
	if (avx2) {
		ffhsv_lut_avx2(img, rows, w, block, t);
		return;
	}
	for (long y = 0; y < rows; y++) {
		ffhsv_run(img + y * 3 * (long)w, 0, w, block, t);
	}
}
