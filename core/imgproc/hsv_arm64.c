// The HSV kernel for arm64: the scalar code of hsv_kern.h.
#include "hsv_kern.h"

void ffhsv_lut(int avx2, uint8_t *img, long rows, int w, int block, const ffhsv_tables *t) {
	(void)avx2;
	for (long y = 0; y < rows; y++) {
		ffhsv_run(img + y * 3 * (long)w, 0, w, block, t);
	}
}
