// Adding restart markers to a scan. The transcoder keeps a source's scan
// when it needs no requantizing, but a scan without markers cannot be cut
// into region streams. Re-encoding it costs a full Huffman decode and encode
// in libjpeg; instead, the scan is decoded here only to find where each
// interval starts, and copied bit for bit, with three changes per interval:
// byte alignment with 1-bits, a marker, and each component's first DC
// difference coded again from zero (the prediction a marker resets). A DC
// table made for the image may have no code for that: then the standard
// table replaces it and every DC difference is coded again.
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jpegint.h>

#include "ffjpeg.h"
#include "ffint.h"
#include "ffscan.h"
#include "ffhuff.h"

// ffh_out writes bits, stuffing a 0x00 after every 0xFF byte.
typedef struct {
	unsigned char *buf;
	size_t len, cap;
	uint64_t acc; // the last n bits are pending
	int n;
} ffh_out;

static int ffh_room(ffh_out *o, size_t more) {
	return ffj_reserve((void **)&o->buf, &o->cap, o->len + more, 1);
}

static inline void ffh_byte(ffh_out *o, unsigned b) {
	o->buf[o->len++] = (unsigned char)b;
	if (b == 0xFF)
		o->buf[o->len++] = 0;
}

// ffh_put writes the low len bits of bits, 0 <= len <= 32.
static inline int ffh_put(ffh_out *o, uint64_t bits, int len) {
	o->acc = o->acc << len | (bits & ((1ULL << len) - 1));
	o->n += len;
	if (o->n < 32)
		return 1;
	o->n -= 32;
	uint32_t w = (uint32_t)(o->acc >> o->n);
	if (!ffh_room(o, 8))
		return 0;
	if (!((~w - 0x01010101u) & w & 0x80808080u)) { // no 0xFF byte
		w = __builtin_bswap32(w);
		memcpy(o->buf + o->len, &w, 4);
		o->len += 4;
		return 1;
	}
	for (int i = 24; i >= 0; i -= 8)
		ffh_byte(o, w >> i & 0xFF);
	return 1;
}

// ffh_copy writes the bits [a, b) of h->buf.
static int ffh_copy(ffh_out *o, const ffh_dec *h, size_t a, size_t b) {
	for (; b - a >= 32; a += 32)
		if (!ffh_put(o, ffh_peek(h->buf, a) >> 32, 32))
			return 0;
	return b == a || ffh_put(o, ffh_peek(h->buf, a) >> (64 - (b - a)), (int)(b - a));
}

// ffh_align pads to a byte with 1-bits and writes the pending bytes.
static int ffh_align(ffh_out *o) {
	if (o->n % 8 && !ffh_put(o, 0xFF, 8 - o->n % 8))
		return 0;
	if (!ffh_room(o, 8))
		return 0;
	while (o->n > 0) {
		o->n -= 8;
		ffh_byte(o, (unsigned)(o->acc >> o->n) & 0xFF);
	}
	return 1;
}

// The DC table of JPEG's Annex K (K.3, luminance), which codes every
// difference of 8-bit samples: what a splice writes where the source's own
// DC table was made for its image and lacks codes (ffh_std_dc_segment).
static const JHUFF_TBL ffh_std_dc = {
	.bits = {0, 0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0},
	.huffval = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
};

size_t ffh_std_dc_segment(unsigned char *out, int slot) {
	size_t n = 0;
	out[n++] = 0xFF;
	out[n++] = 0xC4;
	out[n++] = 0;
	out[n++] = 2 + 1 + 16 + 12;
	out[n++] = (unsigned char)slot; // class 0 (DC), table slot
	for (int l = 1; l <= 16; l++)
		out[n++] = ffh_std_dc.bits[l];
	for (int i = 0; i < 12; i++)
		out[n++] = ffh_std_dc.huffval[i];
	return n;
}

int ffh_dc_complete(j_decompress_ptr c) {
	for (int i = 0; i < c->comps_in_scan; i++) {
		const JHUFF_TBL *t = c->dc_huff_tbl_ptrs[c->cur_comp_info[i]->dc_tbl_no];
		int have = 0, n = 0;
		for (int l = 1; l <= 16; l++)
			n += t->bits[l];
		for (int k = 0; k < n && k < 256; k++)
			if (t->huffval[k] < 12)
				have |= 1 << t->huffval[k];
		if (have != 0xFFF)
			return 0;
	}
	return 1;
}


int ffh_add_restarts(ffh_dec *h, j_decompress_ptr c, const unsigned char *data, size_t len, size_t scan,
                     long ri, int std_dc, unsigned char **buf, size_t *outlen, size_t *cap) {
	if (ri <= 0 || c->restart_interval != 0 || c->progressive_mode || c->arith_code || c->data_precision != 8 ||
	    c->comps_in_scan < 2 || c->comps_in_scan != c->num_components)
		return 0;
	// The scan ends at EOI: any other marker is a layout left to libjpeg.
	size_t p = scan;
	int marker;
	size_t se = ffj_next_marker(data, len, &p, &marker);
	if (marker != 0xD9)
		return 0;
	ffh_reset(h, 0); // the splice wants the scan to end exactly
	if (!ffh_append(h, data + scan, se - scan))
		return 0;

	int comp[D_MAX_BLOCKS_IN_MCU];
	const ffh_tbl *dc[D_MAX_BLOCKS_IN_MCU], *ac[D_MAX_BLOCKS_IN_MCU];
	long mcus;
	int blocks = ffh_layout(h, c, comp, dc, ac, &mcus);
	if (!blocks)
		return 0;
	// The DC codes to write, by size.
	uint16_t code[D_MAX_BLOCKS_IN_MCU][12];
	uint8_t size[D_MAX_BLOCKS_IN_MCU][12];
	for (int b = 0; b < blocks; b++) {
		const JHUFF_TBL *t = c->dc_huff_tbl_ptrs[c->cur_comp_info[comp[b]]->dc_tbl_no];
		if (std_dc)
			t = &ffh_std_dc;
		memset(size[b], 0, sizeof size[b]);
		int n = 0, cd = 0;
		for (int l = 1; l <= 16; l++, cd <<= 1)
			for (int k = 0; k < t->bits[l]; k++, n++, cd++)
				if (t->huffval[n] < 12) {
					code[b][t->huffval[n]] = (uint16_t)cd;
					size[b][t->huffval[n]] = (uint8_t)l;
				}
	}

	ffh_out o = {*buf, *outlen, *cap, 0, 0};
	ffh_bits r = {0, 0, h->buf};
	int pred[MAX_COMPS_IN_SCAN] = {0}, first[MAX_COMPS_IN_SCAN] = {0};
	size_t from = 0, end = 8 * h->len; // bits copied up to from
	int ok = 1;
	for (long m = 0; ok && m < mcus; m++) {
		if (m > 0 && m % ri == 0) { // a new interval
			size_t at = ffh_pos(h, &r);
			ok = ffh_copy(&o, h, from, at) && ffh_align(&o) && ffh_room(&o, 2);
			if (!ok)
				break;
			o.buf[o.len++] = 0xFF;
			o.buf[o.len++] = (unsigned char)(0xD0 + (m / ri - 1) % 8);
			from = at;
			for (int ci = 0; ci < MAX_COMPS_IN_SCAN; ci++)
				first[ci] = 1;
		}
		for (int b = 0; ok && b < blocks; b++) {
			// The DC code and value at [at, dc_end) say pred[ci] minus the
			// last DC; after a marker they must say pred[ci].
			size_t at = ffh_pos(h, &r);
			int diff, ci = comp[b];
			if (ffh_dc(dc[b], &r, &diff) == FFH_BAD) {
				ok = 0;
				break;
			}
			size_t dc_end = ffh_pos(h, &r);
			if (ffh_ac(ac[b], &r, h->discard) == FFH_BAD || ffh_pos(h, &r) > end) {
				ok = 0;
				break;
			}
			pred[ci] += diff;
			if (!first[ci] && !std_dc)
				continue;
			int v = first[ci] ? pred[ci] : diff, mag = v < 0 ? -v : v, cat = 0;
			first[ci] = 0;
			while (mag >> cat)
				cat++;
			if (cat > 11 || !size[b][cat]) {
				ok = 0; // a difference no 8-bit encoder makes
				break;
			}
			ok = ffh_copy(&o, h, from, at) && ffh_put(&o, code[b][cat], size[b][cat]) &&
			     ffh_put(&o, (uint64_t)(v < 0 ? v - 1 : v), cat);
			from = dc_end;
		}
	}
	size_t at = ffh_pos(h, &r);
	// The scan must end on its last byte, as libjpeg checks.
	ok = ok && (at + 7) / 8 == h->len && ffh_copy(&o, h, from, at) && ffh_align(&o);
	*buf = o.buf; // grown or not, the caller's to free
	*cap = o.cap;
	if (!ok)
		return 0;
	*outlen = o.len;
	return 1;
}
