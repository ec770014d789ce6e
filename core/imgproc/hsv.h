// The C kernel of HSVLUT (hsv.go): OpenCV's 8-bit RGB2HSV, three lookup
// tables, HSV2RGB, on each pixel of an RGB image, byte for byte as the Go
// code. The prefix ffhsv_ keeps it apart from the resize kernels.
#ifndef FFHSV_H
#define FFHSV_H

#include <stdint.h>

// The tables of hsv.go, filled by Go: OpenCV's reciprocals, x/255 in
// float32, each hue's sector and fractions, the sectors' picks, and the
// caller's lookup tables.
typedef struct {
	int32_t sdiv[256], hdiv[256];
	float unit[256];
	float frac[181], omf[181];
	uint8_t sector[181];
	uint8_t sectors[6][3];
	uint8_t lut_h[256], lut_s[256], lut_v[256];
} ffhsv_tables;

// ffhsv_lut converts rows rows of w pixels in place; the first block
// pixels of each row truncate (OpenCV's SIMD blocks), the rest round. With
// avx2 (x86-64 only) eight pixels go at a time, with the same bytes.
void ffhsv_lut(int avx2, uint8_t *img, long rows, int w, int block, const ffhsv_tables *t);

#endif
