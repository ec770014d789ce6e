// The C kernel of warpRow3 (warpcv.go): one output row of an RGB
// warpAffine, byte for byte as the Go code; x86-64 only (warp_amd64.c):
// SSE2, or with avx2 eight pixels' coordinates and weights at a time.
#ifndef FFWARP_H
#define FFWARP_H

#include <stdint.h>

void ffwarp_row3(int avx2, uint8_t *row, const uint8_t *src, long src_len, int sh, int sw, int32_t x0, int32_t y0,
                 const int32_t *adelta, const int32_t *bdelta, int dw, const uint8_t *fill);

#endif
