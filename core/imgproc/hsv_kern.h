// OpenCV's 8-bit HSV round trip through lookup tables, in C: the kernel of
// HSVLUT (hsv.go), which holds the reference formulas and their reasons.
// Included by hsv_amd64.c and hsv_arm64.c (cgo compiles a package's C files
// only on the architectures its cgo Go files build for).
#include <stdint.h>

#include "hsv.h"

// 1 - a·b rounded once to float32, as the FMA of OpenCV's build does: the
// product of two float32 values is exact in double, so one rounding of the
// difference in double, then to float32, is what fnma32 computes in Go.
static inline float ffhsv_fnma(float a, float b) { return (float)(1.0 - (double)a * (double)b); }

static inline uint8_t ffhsv_trunc(float x) { return x <= 0 ? 0 : x >= 255 ? 255 : (uint8_t)x; }

// Round half to even (the default rounding mode), clamped.
static inline uint8_t ffhsv_round(float x) {
	float r = __builtin_rintf(x);
	return r <= 0 ? 0 : r >= 255 ? 255 : (uint8_t)r;
}

void ffhsv_lut(uint8_t *img, long rows, int w, int block, const ffhsv_tables *t) {
	for (long y = 0; y < rows; y++) {
		uint8_t *p = img + y * 3 * (long)w;
		for (int x = 0; x < w; x++, p += 3) {
			int r = p[0], g = p[1], b = p[2];
			int v = r > g ? r : g;
			v = v > b ? v : b;
			int vmin = r < g ? r : g;
			vmin = vmin < b ? vmin : b;
			int diff = v - vmin;
			int s = (diff * t->sdiv[v] + (1 << 11)) >> 12;
			int h = v == r ? g - b : v == g ? b - r + 2 * diff : r - g + 4 * diff;
			h = (h * t->hdiv[diff] + (1 << 11)) >> 12;
			h += h < 0 ? 180 : 0;
			float vf = t->unit[t->lut_v[v]];
			uint8_t s2 = t->lut_s[s];
			float rf, gf, bf;
			if (s2 == 0) {
				rf = gf = bf = vf * 255;
			} else {
				float sf = t->unit[s2];
				int hh = t->lut_h[h];
				float tab[4] = {vf, vf * (1 - sf), vf * ffhsv_fnma(sf, t->frac[hh]),
				                vf * ffhsv_fnma(sf, t->omf[hh])};
				const uint8_t *sec = t->sectors[t->sector[hh]];
				rf = tab[sec[2]] * 255;
				gf = tab[sec[1]] * 255;
				bf = tab[sec[0]] * 255;
			}
			if (x < block) {
				p[0] = ffhsv_trunc(rf), p[1] = ffhsv_trunc(gf), p[2] = ffhsv_trunc(bf);
			} else {
				p[0] = ffhsv_round(rf), p[1] = ffhsv_round(gf), p[2] = ffhsv_round(bf);
			}
		}
	}
}
