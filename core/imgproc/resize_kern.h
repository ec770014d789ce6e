// The resize kernels for 3-channel images, included by resize_amd64.c once
// per instruction set (KSUF names the variant). Only the floor is SSE2; the
// AVX2 variant is the same code compiled for AVX2, which gives the compiler
// 256-bit vectors for the row-wide loops and VEX encoding everywhere.
//
// Every operation happens in the order the Go reference code (area.go,
// area_linear.go) performs it, and neither variant enables FMA, so the
// compiler cannot fuse a multiply and an add: both produce the same bytes.

#define KCAT2(a, b) a##b
#define KCAT(a, b) KCAT2(a, b)
#define KFN(name) KCAT(name, KSUF)

// One pixel's 3 channels (and one byte of the next pixel, ignored) as floats.
static inline __m128 KFN(px_f32)(const uint8_t *p) {
	uint32_t v;
	memcpy(&v, p, 4);
	__m128i x = _mm_cvtsi32_si128((int)v);
	x = _mm_unpacklo_epi8(x, _mm_setzero_si128());
	x = _mm_unpacklo_epi16(x, _mm_setzero_si128());
	return _mm_cvtepi32_ps(x);
}

// Like px_f32 but reads the byte before p instead of the byte after it, so
// that the row's last pixel never reads past the row.
static inline __m128 KFN(px_f32_back)(const uint8_t *p) {
	uint32_t v;
	memcpy(&v, p - 1, 4);
	__m128i x = _mm_cvtsi32_si128((int)(v >> 8));
	x = _mm_unpacklo_epi8(x, _mm_setzero_si128());
	x = _mm_unpacklo_epi16(x, _mm_setzero_si128());
	return _mm_cvtepi32_ps(x);
}

#ifdef KAVX2
// hfilter_pairs is area_hfilter's main loop for n <= 5 taps: two output
// pixels per 256-bit vector, pixel dx in the low lane, dx+1 in the high
// one, each tap's weights preloaded 4+4 wide in wx. Each lane loads the 16
// bytes from its pixel's first tap at once, and one byte shuffle per tap
// widens that tap's 3 channels to 32 bits (the 4th is zero); up to 5 taps
// fit in 16 bytes. It stops at the first pair whose 16 bytes would pass
// end (the last row of the source) and returns the pixels it did. Inlined
// with a constant n, the tap loop unrolls.
static inline __attribute__((always_inline)) int KFN(hfilter_pairs)(float *buf, const uint8_t *row,
                                                                    const uint8_t *end, int dw,
                                                                    const int32_t *first, const float *wx,
                                                                    const int n) {
	int dx = 0;
	for (; dx + 2 <= dw; dx += 2, wx += 8 * n) {
		const uint8_t *p0 = row + 3 * (long)first[dx], *p1 = row + 3 * (long)first[dx + 1];
		if (end - p0 < 16 || end - p1 < 16)
			break;
		__m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p0)),
		                                    _mm_loadu_si128((const __m128i *)p1), 1);
		__m256 acc = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_shuffle_epi8(v, tap_shuffle[0].v)),
		                           _mm256_loadu_ps(wx));
		for (int k = 1; k < n; k++)
			acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_shuffle_epi8(v, tap_shuffle[k].v)),
			                                       _mm256_loadu_ps(wx + 8 * k)));
		_mm_storeu_ps(buf + 3 * dx, _mm256_castps256_ps128(acc));
		_mm_storeu_ps(buf + 3 * dx + 3, _mm256_extractf128_ps(acc, 1));
	}
	return dx;
}
#endif

// hfilter box-filters one row: buf[3dx+c] = sum_k row[3(first[dx]+k)+c]*w[n dx+k].
// buf has room for one float more than dw*3. wx is the AVX2 variant's
// weight table (see area_wx) and end the end of the source, past which its
// 16-byte loads must not read; the SSE2 variant ignores both.
static void KFN(area_hfilter)(float *buf, const uint8_t *row, const uint8_t *end, int dw,
                              const int32_t *first, const float *w, int n, const float *wx) {
	int dx = 0;
#ifdef KAVX2
	switch (n) { // one unrolled copy per tap count
	case 1: dx = KFN(hfilter_pairs)(buf, row, end, dw, first, wx, 1); break;
	case 2: dx = KFN(hfilter_pairs)(buf, row, end, dw, first, wx, 2); break;
	case 3: dx = KFN(hfilter_pairs)(buf, row, end, dw, first, wx, 3); break;
	case 4: dx = KFN(hfilter_pairs)(buf, row, end, dw, first, wx, 4); break;
	case 5: dx = KFN(hfilter_pairs)(buf, row, end, dw, first, wx, 5); break;
	}
	wx += 8 * n * (dx / 2);
	for (; dx + 2 <= dw; dx += 2, wx += 8 * n) {
		const uint8_t *p0 = row + 3 * (long)first[dx], *p1 = row + 3 * (long)first[dx + 1];
		__m256 acc = _mm256_setzero_ps();
		for (int k = 0; k < n; k++) {
			uint32_t a, b;
			if (k < n - 1 || n == 1 && first[dx] == 0) {
				memcpy(&a, p0 + 3 * k, 4);
			} else { // the last tap may be the row's last pixel: read backwards
				memcpy(&a, p0 + 3 * k - 1, 4);
				a >>= 8;
			}
			if (k < n - 1) {
				memcpy(&b, p1 + 3 * k, 4);
			} else {
				memcpy(&b, p1 + 3 * k - 1, 4);
				b >>= 8;
			}
			__m128i ab = _mm_cvtsi64_si128((long long)((uint64_t)b << 32 | a));
			__m256 px = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(ab));
			__m256 t = _mm256_mul_ps(px, _mm256_loadu_ps(wx + 8 * k));
			acc = k == 0 ? t : _mm256_add_ps(acc, t);
		}
		_mm_storeu_ps(buf + 3 * dx, _mm256_castps256_ps128(acc));
		_mm_storeu_ps(buf + 3 * dx + 3, _mm256_extractf128_ps(acc, 1));
	}
#else
	(void)wx;
#endif
	for (; dx < dw; dx++) {
		const uint8_t *p = row + 3 * (long)first[dx];
		const float *ws = w + (long)n * dx;
		__m128 acc;
		if (n == 1) {
			acc = _mm_mul_ps(first[dx] > 0 ? KFN(px_f32_back)(p) : KFN(px_f32)(p), _mm_set1_ps(ws[0]));
		} else {
			acc = _mm_mul_ps(KFN(px_f32)(p), _mm_set1_ps(ws[0]));
			for (int k = 1; k < n - 1; k++)
				acc = _mm_add_ps(acc, _mm_mul_ps(KFN(px_f32)(p + 3 * k), _mm_set1_ps(ws[k])));
			acc = _mm_add_ps(acc, _mm_mul_ps(KFN(px_f32_back)(p + 3 * (n - 1)), _mm_set1_ps(ws[n - 1])));
		}
		_mm_storeu_ps(buf + 3 * dx, acc);
	}
}

// store_u8_acc writes round(sum[i] + beta*buf[i]) (or of beta*buf[i] when
// sum is NULL), rounding half to even (the SSE default) and saturating,
// with the float operations of the Go code in its order.
static inline void KFN(store_u8_acc)(uint8_t *out, const float *sum, const float *buf, float beta, int len) {
	const __m128 b = _mm_set1_ps(beta);
	int i = 0;
	for (; i + 8 <= len; i += 8) {
		__m128 x0 = _mm_mul_ps(b, _mm_loadu_ps(buf + i)), x1 = _mm_mul_ps(b, _mm_loadu_ps(buf + i + 4));
		if (sum) {
			x0 = _mm_add_ps(_mm_loadu_ps(sum + i), x0);
			x1 = _mm_add_ps(_mm_loadu_ps(sum + i + 4), x1);
		}
		__m128i s = _mm_packs_epi32(_mm_cvtps_epi32(x0), _mm_cvtps_epi32(x1));
		_mm_storel_epi64((__m128i *)(out + i), _mm_packus_epi16(s, s));
	}
	for (; i < len; i++) {
		float v = beta * buf[i];
		if (sum)
			v = sum[i] + v;
		int x = _mm_cvtss_si32(_mm_set_ss(v));
		out[i] = (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x);
	}
}

// area_run is areaRun of area.go for 3 channels.
static void KFN(area_run)(uint8_t *dst, int dw, int dh, const uint8_t *src, long stride,
                          const int32_t *xfirst, const float *xw, int xn,
                          const int32_t *yfirst, const int32_t *yoff, const float *yw,
                          long src_len, float *buf, float *sum, float *wx) {
	const int len = dw * 3;
	const uint8_t *src_end = src + src_len;
	long cached = -1;
#ifdef KAVX2
	// wx[8n·(dx/2) + 8k + j]: weight k of pixel dx (j < 4) or dx+1 (j >= 4).
	for (int dx = 0; dx + 2 <= dw; dx += 2)
		for (int k = 0; k < xn; k++)
			for (int j = 0; j < 8; j++)
				wx[8 * xn * (dx / 2) + 8 * k + j] = xw[xn * (dx + j / 4) + k];
#endif
	for (int dy = 0; dy < dh; dy++) {
		const int sy0 = yfirst[dy];
		const int nk = yoff[dy + 1] - yoff[dy];
		const float *ws = yw + yoff[dy];
		for (int k = 0; k < nk; k++) {
			const long sy = sy0 + k;
			if (sy != cached) {
				KFN(area_hfilter)(buf, src + sy * stride, src_end, dw, xfirst, xw, xn, wx);
				cached = sy;
			}
			const float beta = ws[k];
			if (k == nk - 1) { // the last row's products go straight to the output
				KFN(store_u8_acc)(dst + (long)dy * len, k ? sum : NULL, buf, beta, len);
			} else if (k == 0) {
				for (int i = 0; i < len; i++)
					sum[i] = beta * buf[i];
			} else {
				for (int i = 0; i < len; i++)
					sum[i] += beta * buf[i];
			}
		}
	}
}

// linear_hrow resamples one row: buf[3dx+c] = row[3ofs[dx]+c]*a[2dx] +
// row[3ofs[dx]+3+c]*a[2dx+1], with ofs[dx]+1 < sw for every dx (the caller
// rewrote OpenCV's edge copies as such pairs). buf has one spare int; end
// is the end of the source, past which the AVX2 variant's 16-byte loads
// must not read.
static void KFN(linear_hrow)(int32_t *buf, const uint8_t *row, const uint8_t *end, int dw,
                             const int32_t *ofs, const int16_t *a) {
	const __m128i z = _mm_setzero_si128();
	int dx = 0;
#ifdef KAVX2
	// Two pixels per 256-bit vector, pixel dx in the low lane and dx+1 in
	// the high one: each lane loads the 16 bytes at its left neighbour, one
	// shuffle pairs the two neighbours' channels as 16-bit (R0 R1 G0 G1 B0
	// B1 0 0) and madd applies the pixel's weight pair. Pixels whose loads
	// would pass end take the loop below.
	for (; dx + 2 <= dw; dx += 2) {
		const uint8_t *p0 = row + 3 * (long)ofs[dx], *p1 = row + 3 * (long)ofs[dx + 1];
		if (end - p0 < 16 || end - p1 < 16)
			break;
		__m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p0)),
		                                    _mm_loadu_si128((const __m128i *)p1), 1);
		// The two weight pairs, each spread over its lane (built from
		// scalars, the compiler goes through the stack and stalls).
		__m256i w = _mm256_permutevar8x32_epi32(
			_mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(a + 2 * dx))), lin_spread.v);
		__m256i r = _mm256_madd_epi16(_mm256_shuffle_epi8(v, lin_shuffle.v), w);
		_mm_storeu_si128((__m128i *)(buf + 3 * dx), _mm256_castsi256_si128(r));
		_mm_storeu_si128((__m128i *)(buf + 3 * dx + 3), _mm256_extracti128_si256(r, 1));
	}
#else
	(void)end;
#endif
	for (; dx < dw; dx++) {
		const uint8_t *p = row + 3 * (long)ofs[dx];
		uint32_t v0, v1;
		memcpy(&v0, p, 4);     // R0 G0 B0 R1
		memcpy(&v1, p + 2, 4); // B0 R1 G1 B1: shifted down, R1 G1 B1 0
		__m128i x0 = _mm_unpacklo_epi8(_mm_cvtsi32_si128((int)v0), z);
		__m128i x1 = _mm_unpacklo_epi8(_mm_cvtsi32_si128((int)(v1 >> 8)), z);
		__m128i pr = _mm_unpacklo_epi16(x0, x1); // R0 R1 G0 G1 B0 B1 R1 0
		int32_t c;
		memcpy(&c, a + 2 * dx, 4);
		__m128i r = _mm_madd_epi16(pr, _mm_set1_epi32(c));
		_mm_storeu_si128((__m128i *)(buf + 3 * dx), r);
	}
}

// linear_vrow is OpenCV's VResizeLinearVec_32s8u: the rows are 2048-scaled,
// the coefficients 11-bit; products keep their high 16 bits.
static void KFN(linear_vrow)(uint8_t *out, const int32_t *s0, const int32_t *s1, int len,
                             int16_t b0, int16_t b1) {
	const __m128i vb0 = _mm_set1_epi16(b0), vb1 = _mm_set1_epi16(b1), two = _mm_set1_epi16(2);
	int i = 0;
#ifdef KAVX2
	const __m256i wb0 = _mm256_set1_epi16(b0), wb1 = _mm256_set1_epi16(b1), wtwo = _mm256_set1_epi16(2);
	for (; i + 16 <= len; i += 16) {
		// packs works per 128-bit lane; the permute restores element order.
		__m256i a = _mm256_permute4x64_epi64(_mm256_packs_epi32(
			_mm256_srai_epi32(_mm256_loadu_si256((const __m256i *)(s0 + i)), 4),
			_mm256_srai_epi32(_mm256_loadu_si256((const __m256i *)(s0 + i + 8)), 4)), 0xD8);
		__m256i b = _mm256_permute4x64_epi64(_mm256_packs_epi32(
			_mm256_srai_epi32(_mm256_loadu_si256((const __m256i *)(s1 + i)), 4),
			_mm256_srai_epi32(_mm256_loadu_si256((const __m256i *)(s1 + i + 8)), 4)), 0xD8);
		__m256i x = _mm256_add_epi16(_mm256_mulhi_epi16(a, wb0), _mm256_mulhi_epi16(b, wb1));
		x = _mm256_srai_epi16(_mm256_add_epi16(x, wtwo), 2);
		__m256i p = _mm256_packus_epi16(x, x); // lane k: bytes 8k..8k+7, twice
		__m128i o = _mm_unpacklo_epi64(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
		_mm_storeu_si128((__m128i *)(out + i), o);
	}
#endif
	for (; i + 8 <= len; i += 8) {
		__m128i a = _mm_packs_epi32(_mm_srai_epi32(_mm_loadu_si128((const __m128i *)(s0 + i)), 4),
		                            _mm_srai_epi32(_mm_loadu_si128((const __m128i *)(s0 + i + 4)), 4));
		__m128i b = _mm_packs_epi32(_mm_srai_epi32(_mm_loadu_si128((const __m128i *)(s1 + i)), 4),
		                            _mm_srai_epi32(_mm_loadu_si128((const __m128i *)(s1 + i + 4)), 4));
		__m128i x = _mm_add_epi16(_mm_mulhi_epi16(a, vb0), _mm_mulhi_epi16(b, vb1));
		x = _mm_srai_epi16(_mm_add_epi16(x, two), 2);
		_mm_storel_epi64((__m128i *)(out + i), _mm_packus_epi16(x, x));
	}
	for (; i < len; i++) {
		int x = (((s0[i] >> 4) * b0) >> 16) + (((s1[i] >> 4) * b1) >> 16);
		x = (x + 2) >> 2;
		out[i] = (uint8_t)(x > 255 ? 255 : x);
	}
}

// linear_run is linearRun of area_linear.go for 3 channels.
static void KFN(linear_run)(uint8_t *dst, int dw, int dh, const uint8_t *src, int sh, long stride,
                            const int32_t *xofs, const int16_t *xa,
                            const int32_t *yofs, const int16_t *ya,
                            long src_len, int32_t *r0, int32_t *r1) {
	const int len = dw * 3;
	const uint8_t *src_end = src + src_len;
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
				KFN(linear_hrow)(rows[0], src + y0 * stride, src_end, dw, xofs, xa);
				have[0] = y0;
			}
		}
		const int32_t *s1 = rows[0];
		if (y1 != y0) {
			if (have[1] != y1) {
				KFN(linear_hrow)(rows[1], src + y1 * stride, src_end, dw, xofs, xa);
				have[1] = y1;
			}
			s1 = rows[1];
		}
		KFN(linear_vrow)(out, rows[0], s1, len, b0, b1);
	}
}
