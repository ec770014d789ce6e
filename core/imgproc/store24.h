// ff_store24 writes eight RGB pixels, held as 12 bytes at the low end of
// each 128-bit half of v (pixels 0-3, then 4-7), as 24 bytes at d: the low
// half with a 16-byte store whose 4 spare bytes the high half's 12 then
// overwrite, so nothing past the 24 bytes is written. For the AVX2 kernels:
// include it between FF_AVX2_BEGIN and FF_AVX2_END.
#ifndef FF_STORE24_H
#define FF_STORE24_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

static inline void ff_store24(uint8_t *d, __m256i v) {
	__m128i hi = _mm256_extracti128_si256(v, 1);
	_mm_storeu_si128((__m128i *)d, _mm256_castsi256_si128(v));
	_mm_storel_epi64((__m128i *)(d + 12), hi);
	int32_t last = _mm_extract_epi32(hi, 2);
	memcpy(d + 20, &last, 4);
}

#endif
