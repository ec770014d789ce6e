// Region streams: a JPEG whose scan has restart markers can be cut, at the
// markers, into a smaller JPEG holding only the MCUs a crop needs. Each
// restart interval starts with the DC predictions reset and on a byte
// boundary, so the intervals under the crop, back to back, make a valid scan
// on their own, and the rows above the crop and the columns beside it are
// never entropy-decoded (libjpeg must decode both when it reads the whole
// scan). The intervals go to our Huffman decoder (ffhuff.c), a header with
// the region's size (and EOI for a scan) to libjpeg.
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h>

#include "ffjpeg.h"
#include "ffint.h"
#include "ffscan.h"

// ffr_sof returns the offset of the SOF0 or SOF1 marker code in the header
// data[0:end), or 0.
static size_t ffr_sof(const unsigned char *data, size_t end) {
	size_t i = 2;
	while (i + 4 <= end) {
		if (data[i] != 0xFF)
			return 0;
		if (data[i + 1] == 0xFF) { // fill byte
			i++;
			continue;
		}
		int m = data[i + 1];
		if (m == 0xC0 || m == 0xC1)
			return i + 1;
		if (m == 0xDA)
			return 0;
		i += 2 + ((size_t)data[i + 2] << 8 | data[i + 3]);
	}
	return 0;
}

// ffr_segments finds where restart intervals 0..last of the scan starting at
// data[scan] begin and end, into d->seg (pairs of offsets). It returns 0 on
// anything but markers RST0, RST1, ... in sequence; the last interval may end
// at any other marker (EOI).
static int ffr_segments(ffj_dec *d, const unsigned char *data, size_t len, size_t scan, long last) {
	size_t p = scan;
	for (long i = 0; i <= last; i++) {
		// Grown as markers are found, so a header claiming a huge image
		// costs no more memory than its data has markers.
		if (!ffj_reserve((void **)&d->seg, &d->seg_cap, 2 * (size_t)(i + 1), sizeof *d->seg))
			return 0;
		d->seg[2 * i] = p;
		int b;
		size_t at = ffj_next_marker(data, len, &p, &b);
		if (!b || !(b == 0xD0 + (int)(i & 7) || (i == last && (b < 0xD0 || b > 0xD7))))
			return 0;
		d->seg[2 * i + 1] = at;
	}
	return 1;
}

int ffj_region_stream(ffj_dec *d, const unsigned char *data, size_t len, int x0, int y0, int x1, int y1,
                      int *ox, int *oy) {
	j_decompress_ptr c = &d->cinfo;
	if (d->no_region || c->restart_interval == 0 || c->progressive_mode || c->arith_code ||
	    c->data_precision != 8 || c->comps_in_scan != c->num_components || !c->src)
		return 0;
	// A scan of one component must not be subsampled: its MCUs are then
	// single blocks, which do not tile the image as the MCU rows would.
	if (c->comps_in_scan == 1 && (c->comp_info[0].h_samp_factor != 1 || c->comp_info[0].v_samp_factor != 1))
		return 0;
	int fw, fh;
	long mw, mh;
	ffj_mcu_grid(c, &fw, &fh, &mw, &mh);
	int m = (int)c->scale_num; // the scale decided on: MCUs are fw*m/8 scaled pixels wide
	int sw = fw * m / 8, sh = fh * m / 8;
	long R = (long)c->restart_interval;
	// Chroma upsampling treats the cut's edges as image edges, which changes
	// the pixel next to each edge: keep one scaled pixel of margin around
	// the rows and columns asked for (the caller has widened the columns).
	long my0 = y0 > 0 ? (y0 - 1) / sh : 0;
	long my1 = ((long)y1 + 1 + sh - 1) / sh;
	long mx0 = x0 / sw, mx1 = ((long)x1 + sw - 1) / sw;
	if (my1 > mh)
		my1 = mh;
	if (mx1 > mw)
		mx1 = mw;
	long per_row, rows_per, c0, c1; // intervals per MCU row, or MCU rows per interval
	if (mw % R == 0) {              // intervals tile each row: cut columns too
		per_row = mw / R;
		rows_per = 1;
		c0 = mx0 / R;
		c1 = (mx1 + R - 1) / R;
		mx0 = c0 * R;
		mx1 = c1 * R;
	} else if (R % mw == 0) { // an interval holds whole rows: cut rows only
		per_row = 0;
		rows_per = R / mw;
		c0 = 0;
		c1 = 1;
		mx0 = 0;
		mx1 = mw;
		my0 = my0 / rows_per * rows_per;
		my1 = (my1 + rows_per - 1) / rows_per * rows_per;
		if (my1 > mh)
			my1 = mh;
	} else {
		return 0;
	}
	long last = per_row ? (my1 - 1) * per_row + c1 - 1 : (my1 - 1) / rows_per;

	size_t scan = len - c->src->bytes_in_buffer; // libjpeg has read up to the end of SOS
	size_t sof = ffr_sof(data, scan);
	if (!sof || sof + 8 > scan || !ffr_segments(d, data, len, scan, last))
		return 0;

	// The region's size in full-resolution pixels: whole MCUs, except where
	// it reaches the image's right or bottom edge (partial MCUs stay partial).
	long w = mx1 == mw ? (long)c->image_width - mx0 * fw : (mx1 - mx0) * fw;
	long h = my1 == mh ? (long)c->image_height - my0 * fh : (my1 - my0) * fh;
	// The header with the region's size, then EOI where the scan would be:
	// the scan's intervals go to our Huffman decoder, unstuffed.
	if (!ffh_tables(d->huff, c) || !ffj_reserve((void **)&d->region, &d->region_cap, scan + 2, 1))
		return 0;
	unsigned char *out = d->region;
	memcpy(out, data, scan);
	out[sof + 4] = (unsigned char)(h >> 8);
	out[sof + 5] = (unsigned char)h;
	out[sof + 6] = (unsigned char)(w >> 8);
	out[sof + 7] = (unsigned char)w;
	out[scan] = 0xFF;
	out[scan + 1] = 0xD9;
	d->region_len = scan + 2;
	long total = per_row ? mh * per_row : (mh + rows_per - 1) / rows_per; // intervals in the scan
	ffh_reset(d->huff, last == total - 1);
	if (d->share)
		ffh_use_cache(d->huff, total, d->share == FFJ_SHARE_KEEP);
	for (long r = my0; r < my1; r++) {
		if (!per_row && r % rows_per)
			continue;
		for (long j = c0; j < c1; j++) {
			long s = per_row ? r * per_row + j : r / rows_per;
			if (!ffh_append_at(d->huff, s, data + d->seg[2 * s], d->seg[2 * s + 1] - d->seg[2 * s]))
				return 0;
		}
	}
	*ox = (int)(mx0 * sw);
	*oy = (int)(my0 * sh);
	return 1;
}

int ffj_scan_clean(ffj_dec *d, const unsigned char *data, size_t len, size_t scan) {
	j_decompress_ptr c = &d->cinfo;
	long ri = (long)c->restart_interval;
	if (ri <= 0 || c->comps_in_scan < 2 || c->comps_in_scan != c->num_components || c->progressive_mode ||
	    c->arith_code || !ffh_tables(d->huff, c))
		return 0;
	int fw, fh;
	long mw, mh;
	ffj_mcu_grid(c, &fw, &fh, &mw, &mh);
	long last = (mw * mh + ri - 1) / ri - 1;
	if (!ffr_segments(d, data, len, scan, last))
		return 0;
	ffh_reset(d->huff, 1);
	for (long s = 0; s <= last; s++)
		if (!ffh_append(d->huff, data + d->seg[2 * s], d->seg[2 * s + 1] - d->seg[2 * s]))
			return 0;
	return ffh_check(d->huff, c) ? 1 : -1;
}
