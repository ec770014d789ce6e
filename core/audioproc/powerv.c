//go:build cgo

// The power spectra of several real frames at once: fft.go's Stockham
// transform and RFFT.Power's split, the same operations in the same
// order, on vectors of doubles whose lanes are the frames; then, for
// ffstft_mel_lanes, MelBank.Apply's sums. GCC's and Clang's vector
// extensions lower them with no intrinsics. powerv_kernel.h is compiled
// here for two lanes (an SSE2 register on x86-64, the wheels' baseline,
// and a NEON one on arm64) and on x86-64 again for four, in AVX2 with
// FMA, which Go passes as the lanes argument where the CPU has them.
// Vectors wider than the target's registers would be split piecewise
// through the stack: hence one width per target.
#include <stddef.h>
#include "powerv.h"

static const double sqrt_half = 0.7071067811865476, sin3 = -0.8660254037844386, cos51 = 0.30901699437494745,
                    cos52 = -0.8090169943749475, sin51 = -0.9510565162951535, sin52 = -0.5877852522924731;

// The butterflies of one Stockham step: p over the sub-transforms, q
// over the stride, with w the twiddles of p, i the first input, o the
// first output.
#define LOOP(...)                                                                                                      \
	for (int p = 0; p < m; p++) {                                                                                  \
		const double *w = tw + 2 * (r - 1) * p;                                                                \
		for (int q = 0; q < s; q++) {                                                                          \
			int i = q + s * p, o = q + s * r * p;                                                          \
			__VA_ARGS__                                                                                    \
		}                                                                                                      \
	}

// Two lanes, every target.
#define VL 2
#define TARGET
#define vd vd2
#define twiddle twiddle2
#define stage stage2
#define power_vec power_vec2
#define power_out power_out2
#define mel_out mel_out2
#include "powerv_kernel.h"
#undef VL
#undef TARGET
#undef vd
#undef twiddle
#undef stage
#undef power_vec
#undef power_out
#undef mel_out

#if defined(__x86_64__)
// Four lanes in AVX2 with FMA.
#define VL 4
#define TARGET __attribute__((target("avx2,fma")))
#define vd vd4
#define twiddle twiddle4
#define stage stage4
#define power_vec power_vec4
#define power_out power_out4
#define mel_out mel_out4
#include "powerv_kernel.h"
#endif

void ffstft_power_lanes(int lanes, const ffstft_plan *pl, const double *tw, const double *wk, const float *x,
                     const long *start, const double *win, double *zr, double *zi, double *tr, double *ti,
                     double *out) {
#if defined(__x86_64__)
	if (lanes == 4) {
		power_out4(pl, tw, wk, x, start, win, zr, zi, tr, ti, out);
		return;
	}
#endif
	power_out2(pl, tw, wk, x, start, win, zr, zi, tr, ti, out);
}

void ffstft_mel_lanes(int lanes, const ffstft_plan *pl, const double *tw, const double *wk, const float *x,
                   const long *start, const double *win, double *zr, double *zi, double *tr, double *ti,
                   int bands, const int *lo, const int *len, const double *w, double *out) {
#if defined(__x86_64__)
	if (lanes == 4) {
		mel_out4(pl, tw, wk, x, start, win, zr, zi, tr, ti, bands, lo, len, w, out);
		return;
	}
#endif
	mel_out2(pl, tw, wk, x, start, win, zr, zi, tr, ti, bands, lo, len, w, out);
}
