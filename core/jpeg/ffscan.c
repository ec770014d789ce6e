// Scan geometry and byte-level helpers shared by the region cutter, the
// Huffman decoder and the splice (see ffscan.h).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "ffscan.h"

void ffj_mcu_grid(j_decompress_ptr c, int *fw, int *fh, long *mw, long *mh) {
	*fw = *fh = 8;
	if (c->comps_in_scan > 1) {
		*fw = 8 * c->max_h_samp_factor;
		*fh = 8 * c->max_v_samp_factor;
	}
	*mw = ((long)c->image_width + *fw - 1) / *fw;
	*mh = ((long)c->image_height + *fh - 1) / *fh;
}

int ffj_reserve(void **buf, size_t *cap, size_t n, size_t sz) {
	if (n <= *cap)
		return 1;
	size_t c = *cap ? *cap : 64;
	while (c < n)
		c *= 2;
	void *nb = realloc(*buf, c * sz);
	if (!nb)
		return 0;
	*buf = nb;
	*cap = c;
	return 1;
}

size_t ffj_next_marker(const unsigned char *data, size_t len, size_t *p, int *code) {
	for (;;) {
		const unsigned char *q = memchr(data + *p, 0xFF, len - *p);
		if (!q)
			break;
		size_t at = (size_t)(q - data), r = at;
		while (r + 1 < len && data[r + 1] == 0xFF)
			r++; // fill bytes
		if (r + 1 >= len)
			break;
		*p = r + 2;
		if (data[r + 1] != 0x00) { // not a stuffed 0xFF data byte
			*code = data[r + 1];
			return at;
		}
	}
	*code = 0;
	return len;
}
