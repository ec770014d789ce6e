// OpenCV's 8-bit HSV round trip through lookup tables, in C: the scalar
// kernel of HSVLUT (hsv.go, which holds the reference formulas and their
// reasons). Included by hsv_amd64.c and hsv_arm64.c (cgo compiles a
// package's C files only on the architectures its cgo Go files build for).
#include <stdint.h>

#include "hsv.h"

// 1 - a·b rounded once to float32, as the FMA of OpenCV's build does: the
// product of two float32 values is exact in double, so one rounding of the
// difference in double, then to float32, is what fnma32 computes in Go.
static inline float ffhsv_fnma(float a, float b) { return (float)(1.0 - (double)a * (double)b); }

// The pixel's r, g and b times 255 (hsvScaled). Branch-free, as photos
// give no predictor a pattern: the sector's picks are a table, and s = 0
// needs no case of its own (every pick is then v).
static inline void ffhsv_pixel(const uint8_t *p, const ffhsv_tables *t, float out[3]) {
	int r = p[0], g = p[1], b = p[2];
	int v = r > g ? r : g;
	v = v > b ? v : b;
	int vmin = r < g ? r : g;
	vmin = vmin < b ? vmin : b;
	int diff = v - vmin;
	int s = (diff * t->sdiv[v] + (1 << 11)) >> 12;
	int mr = -(v == r), mg = -(v == g) & ~mr, mb = ~(mr | mg);
	int h = ((g - b) & mr) | ((b - r + 2 * diff) & mg) | ((r - g + 4 * diff) & mb);
	h = (h * t->hdiv[diff] + (1 << 11)) >> 12;
	h += 180 & -(h < 0);
	float vf = t->unit[t->lut_v[v]], sf = t->unit[t->lut_s[s]];
	int hh = t->lut_h[h];
	float tab[4] = {vf, vf * (1 - sf), vf * ffhsv_fnma(sf, t->frac[hh]), vf * ffhsv_fnma(sf, t->omf[hh])};
	const uint8_t *sec = t->sectors[t->sector[hh]];
	out[0] = tab[sec[2]] * 255;
	out[1] = tab[sec[1]] * 255;
	out[2] = tab[sec[0]] * 255;
}

// Toward zero (OpenCV's SIMD blocks) or half to even (its scalar code:
// adding and taking away 2^23 rounds a float below 2^23 in the default
// mode), then clamped to [0, 255] as integers, without branches.
static inline uint8_t ffhsv_clamp(int x) {
	x = x > 0 ? x : 0;
	return (uint8_t)(x < 255 ? x : 255);
}
static inline uint8_t ffhsv_trunc(float x) { return ffhsv_clamp((int)x); }
static inline uint8_t ffhsv_round(float x) {
	volatile float big = 8388608.0f; // kept from being folded away
	return ffhsv_clamp((int)((x + big) - big));
}

// ffhsv_run converts pixels [x0, x1) of a row at p (pixel 0), truncating
// those below block.
static void ffhsv_run(uint8_t *row, int x0, int x1, int block, const ffhsv_tables *t) {
	float c[3];
	uint8_t *p = row + 3 * x0;
	for (int x = x0; x < x1; x++, p += 3) {
		ffhsv_pixel(p, t, c);
		if (x < block) {
			p[0] = ffhsv_trunc(c[0]), p[1] = ffhsv_trunc(c[1]), p[2] = ffhsv_trunc(c[2]);
		} else {
			p[0] = ffhsv_round(c[0]), p[1] = ffhsv_round(c[1]), p[2] = ffhsv_round(c[2]);
		}
	}
}
