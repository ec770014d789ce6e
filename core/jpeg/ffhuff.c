// Huffman decoding of region streams. libjpeg-turbo decodes every MCU of a
// scan with restart markers on its slow path (its fast path gives up at
// markers), which made the intervals a crop needs cost about as much per
// byte as the whole scan did without markers. A region stream (ffregion.c)
// knows where each of its intervals starts and ends, so this decoder takes
// them unstuffed, back to back, and replaces libjpeg's entropy decoder for
// that scan: no marker handling at all, and a bit position instead of a bit
// buffer, read 64 bits at a time.
//
// It produces libjpeg's coefficients exactly (the region tests compare
// against libjpeg's own decode of the whole scan) and reports damage as
// libjpeg's warnings do: a bad code, an interval that runs past its end or
// stops short of it (except the scan's last: libjpeg drops the bytes its
// bit buffer has read past the last MCU unchecked, so some encoders' extra
// padding there passes). It is stricter in one place: a run of zeros past the
// 64th coefficient is a bad code (libjpeg stores the value at the 64th).
// Every warning is fatal (ffj_emit_message).
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>
#include <jpegint.h>

#include "ffjpeg.h"
#include "ffint.h"

#define FFH_LOOK 11 // bits looked up at once
// Zero bytes after the last interval, so that reading 64 bits anywhere up to
// one damaged block's worth (64 codes of at most 16+16 bits) past an
// interval's end stays inside the buffer.
#define FFH_PAD (64 * 32 / 8 + 16)

// A derived table: the canonical codes of a JHUFF_TBL.
typedef struct {
	JHUFF_TBL src;                  // what it was built from, to reuse it
	int valid;
	uint16_t look[1 << FFH_LOOK];   // code length << 8 | symbol; 0: longer
	int32_t ac[1 << FFH_LOOK];      // AC code and value together (see ffh_build)
	int32_t maxcode[18];            // largest code of each length, -1: none
	int32_t valoff[17];             // symbol index of length l's codes minus the first
	uint8_t val[256];
} ffh_tbl;

// A bit reader over h->buf: the next cnt bits at the top of bb, then zeros;
// p is where the bytes not yet in bb start.
typedef struct {
	uint64_t bb;
	int cnt;
	const unsigned char *p;
} ffh_bits;

struct ffh_dec {
	struct jpeg_entropy_decoder pub; // first: libjpeg calls through cinfo->entropy
	ffh_tbl tbl[2][NUM_HUFF_TBLS];   // DC, AC
	unsigned char *buf;              // the intervals, unstuffed, then FFH_PAD zeros
	size_t len, cap;
	size_t *end; // end[k]: where interval k ends in buf (interval k+1 starts)
	size_t nend, end_cap;
	// Per scan:
	const ffh_tbl *dc[D_MAX_BLOCKS_IN_MCU], *acs[D_MAX_BLOCKS_IN_MCU];
	int comp[D_MAX_BLOCKS_IN_MCU];
	int blocks;
	ffh_bits r;
	JCOEF discard[DCTSIZE2]; // where skipped MCUs' coefficients go
	size_t k;   // current interval
	long left;  // MCUs left in it
	long mcus;  // MCUs left in the stream
	int scan_end; // the last interval ends the scan: bytes may follow its codes
	int last_dc[MAX_COMPS_IN_SCAN];
};

// Zigzag to natural order.
static const unsigned char ffh_natural[64] = {
	0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,
	12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28,
	35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
	58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
};

ffh_dec *ffh_new(void) { return calloc(1, sizeof(ffh_dec)); }

void ffh_free(ffh_dec *h) {
	if (!h)
		return;
	free(h->buf);
	free(h->end);
	free(h);
}

// ffh_extend is JPEG's sign extension of an s-bit value (HUFF_EXTEND).
static inline int ffh_extend(int v, int s) { return v < (1 << (s - 1)) ? v - (1 << s) + 1 : v; }

// ffh_build derives t from src (a DC table when dc); it returns 0 where
// libjpeg finds the table bad: codes that overflow their lengths, or a DC
// symbol (a size in bits) over 15.
static int ffh_build(ffh_tbl *t, const JHUFF_TBL *src, int dc) {
	if (t->valid && memcmp(t->src.bits, src->bits, sizeof src->bits) == 0 &&
	    memcmp(t->src.huffval, src->huffval, sizeof src->huffval) == 0)
		return 1;
	t->valid = 0;
	memcpy(t->src.bits, src->bits, sizeof src->bits);
	memcpy(t->src.huffval, src->huffval, sizeof src->huffval);
	memset(t->look, 0, sizeof t->look);
	memset(t->ac, 0, sizeof t->ac);
	int n = 0;
	int32_t code = 0;
	for (int l = 1; l <= 16; l++) {
		int cnt = src->bits[l];
		if (n + cnt > 256)
			return 0;
		t->valoff[l] = n - code;
		t->maxcode[l] = cnt ? code + cnt - 1 : -1;
		for (int i = 0; i < cnt; i++, n++, code++) {
			if (code >= (1 << l))
				return 0;
			t->val[n] = src->huffval[n];
			if (dc && src->huffval[n] > 15)
				return 0;
			if (l > FFH_LOOK)
				continue;
			// Every FFH_LOOK-bit index starting with this code.
			int sym = src->huffval[n], r = sym >> 4, s = sym & 15, shift = FFH_LOOK - l;
			for (int x = code << shift; x < (code + 1) << shift; x++) {
				t->look[x] = (uint16_t)(l << 8 | sym);
				// The AC entry when the value's bits are in the index too:
				// value << 8 | run << 4 | total bits (at most FFH_LOOK);
				// value 0 is end of block.
				if (!dc && sym == 0)
					t->ac[x] = l;
				if (s && l + s <= FFH_LOOK) {
					int v = ffh_extend((x >> (shift - s)) & ((1 << s) - 1), s);
					t->ac[x] = (int32_t)((uint32_t)v << 8) | r << 4 | (l + s);
				}
			}
		}
		code <<= 1;
	}
	t->maxcode[17] = INT32_MAX; // ends the slow search (a code longer than 16 bits is bad)
	t->valid = 1;
	return 1;
}

int ffh_tables(ffh_dec *h, j_decompress_ptr c) {
	for (int i = 0; i < c->comps_in_scan; i++) {
		jpeg_component_info *ci = c->cur_comp_info[i];
		// SOS names tables 0-15 of which there are 4: libjpeg checks later.
		if (ci->dc_tbl_no < 0 || ci->dc_tbl_no >= NUM_HUFF_TBLS || ci->ac_tbl_no < 0 || ci->ac_tbl_no >= NUM_HUFF_TBLS)
			return 0;
		JHUFF_TBL *dc = c->dc_huff_tbl_ptrs[ci->dc_tbl_no], *ac = c->ac_huff_tbl_ptrs[ci->ac_tbl_no];
		// A missing table is left to libjpeg, which has defaults for it.
		if (!dc || !ac || !ffh_build(&h->tbl[0][ci->dc_tbl_no], dc, 1) ||
		    !ffh_build(&h->tbl[1][ci->ac_tbl_no], ac, 0))
			return 0;
	}
	return 1;
}

void ffh_reset(ffh_dec *h, int scan_end) {
	h->scan_end = scan_end;
	h->len = 0;
	h->nend = 0;
}

int ffh_append(ffh_dec *h, const unsigned char *p, size_t n) {
	size_t need = h->len + n + FFH_PAD;
	if (need > h->cap) {
		size_t c = h->cap ? h->cap : 1 << 16;
		while (c < need)
			c *= 2;
		unsigned char *nb = realloc(h->buf, c);
		if (!nb)
			return 0;
		h->buf = nb;
		h->cap = c;
	}
	if (h->nend == h->end_cap) {
		size_t c = h->end_cap ? 2 * h->end_cap : 256;
		size_t *ne = realloc(h->end, c * sizeof *ne);
		if (!ne)
			return 0;
		h->end = ne;
		h->end_cap = c;
	}
	// The caller's interval holds no markers: every 0xFF (after any fill
	// 0xFFs) is followed by a stuffed 0x00, dropped here.
	unsigned char *out = h->buf + h->len;
	const unsigned char *e = p + n;
	while (p < e) {
		const unsigned char *q = memchr(p, 0xFF, (size_t)(e - p));
		if (!q) {
			memcpy(out, p, (size_t)(e - p));
			out += e - p;
			break;
		}
		memcpy(out, p, (size_t)(q - p));
		out += q - p;
		*out++ = 0xFF;
		p = q + 1;
		while (p < e && *p == 0xFF)
			p++;
		if (p < e)
			p++; // the 0x00
	}
	h->len = (size_t)(out - h->buf);
	h->end[h->nend++] = h->len;
	memset(out, 0, FFH_PAD);
	return 1;
}

// ffh_peek returns the 64 bits at bit pos of buf (at least 57 of them real).
static inline uint64_t ffh_peek(const unsigned char *buf, size_t pos) {
	uint64_t v;
	memcpy(&v, buf + (pos >> 3), 8);
	return __builtin_bswap64(v) << (pos & 7);
}

// ffh_refill tops bb up to 56-63 bits.
static inline void ffh_refill(ffh_bits *r) {
	uint64_t v;
	memcpy(&v, r->p, 8);
	r->bb |= __builtin_bswap64(v) >> r->cnt;
	r->p += (63 - r->cnt) >> 3;
	r->cnt |= 56;
}

static inline void ffh_skip(ffh_bits *r, int n) {
	r->bb <<= n;
	r->cnt -= n;
}

// ffh_symbol decodes a symbol (bb holds at least 16 bits); -1 for a bad code.
static inline int ffh_symbol(const ffh_tbl *t, ffh_bits *r) {
	unsigned e = t->look[r->bb >> (64 - FFH_LOOK)];
	if (e) {
		ffh_skip(r, (int)(e >> 8));
		return (int)(e & 0xFF);
	}
	int l = FFH_LOOK + 1;
	int32_t code = (int32_t)(r->bb >> (64 - l));
	while (code > t->maxcode[l]) {
		if (++l > 16)
			return -1;
		code = (int32_t)(r->bb >> (64 - l));
	}
	ffh_skip(r, l);
	return t->val[t->valoff[l] + code];
}

// ffh_value reads an s-bit value, 1 <= s <= 16 (bb holds at least s bits).
static inline int ffh_value(ffh_bits *r, int s) {
	int v = ffh_extend((int)(r->bb >> (64 - s)), s);
	ffh_skip(r, s);
	return v;
}

// ffh_block decodes one block's codes into blk (coefficients that are not
// zero; blk[0] gets the DC difference, before prediction). It returns 0, or
// FFH_BAD for a bad code or a run past the block.
#define FFH_BAD (-1)
static inline int ffh_ac(const ffh_tbl *t, ffh_bits *r, JCOEF *blk);
static inline int ffh_block(const ffh_tbl *dc, const ffh_tbl *t, ffh_bits *r, JCOEF *blk, int *diff) {
	if (r->cnt < 32)
		ffh_refill(r);
	int s = ffh_symbol(dc, r);
	if (s < 0)
		return FFH_BAD;
	*diff = s ? ffh_value(r, s) : 0;
	return ffh_ac(t, r, blk);
}

// ffh_ac decodes a block's AC codes, as ffh_block.
static inline int ffh_ac(const ffh_tbl *t, ffh_bits *r, JCOEF *blk) {
	for (int k = 1; k < 64; k++) {
		if (r->cnt < 32)
			ffh_refill(r);
		int32_t e = t->ac[r->bb >> (64 - FFH_LOOK)];
		if (e) { // run, size and value in one look
			ffh_skip(r, e & 15);
			if (!(e >> 8))
				return 0; // end of block
			k += (e >> 4) & 15;
			if (k > 63)
				return FFH_BAD;
			blk[ffh_natural[k]] = (JCOEF)(e >> 8);
			continue;
		}
		int rs = ffh_symbol(t, r);
		if (rs < 0)
			return FFH_BAD;
		int run = rs >> 4, sz = rs & 15;
		if (sz) {
			k += run;
			if (k > 63)
				return FFH_BAD;
			blk[ffh_natural[k]] = (JCOEF)ffh_value(r, sz);
		} else if (run == 15) {
			k += 15; // sixteen zeros
		} else {
			return 0; // end of block
		}
	}
	return 0;
}

static void ffh_start_pass(j_decompress_ptr c) { (void)c; }

// ffh_pos is the bit position of r in h->buf.
static inline size_t ffh_pos(const ffh_dec *h, const ffh_bits *r) {
	return 8 * (size_t)(r->p - h->buf) - (size_t)r->cnt;
}

static boolean ffh_decode_mcu(j_decompress_ptr c, JBLOCKROW *mcu) {
	ffh_dec *h = (ffh_dec *)c->entropy;
	if (h->mcus-- <= 0)
		ERREXIT(c, JERR_BAD_DCT_COEF); // more MCUs than the region has: cannot happen
	ffh_bits r = h->r;
	if (h->left == 0) { // the next interval: the last one must have ended on its last byte
		if (h->k + 1 >= h->nend)
			ERREXIT(c, JERR_BAD_DCT_COEF); // more intervals than the region has: cannot happen
		size_t used = (ffh_pos(h, &r) + 7) / 8;
		if (used != h->end[h->k])
			WARNMS2(c, JWRN_EXTRANEOUS_DATA, (unsigned)(h->end[h->k] - used), 0xD0 + (int)(h->k & 7));
		r = (ffh_bits){0, 0, h->buf + h->end[h->k++]};
		h->left = (long)c->restart_interval;
		memset(h->last_dc, 0, sizeof h->last_dc);
	}
	h->left--;
	const size_t end = 8 * h->end[h->k];
	for (int b = 0; b < h->blocks; b++) {
		JCOEF *blk = mcu ? mcu[b][0] : h->discard;
		int diff;
		if (ffh_block(h->dc[b], h->acs[b], &r, blk, &diff) == FFH_BAD)
			WARNMS(c, JWRN_HUFF_BAD_CODE); // a run past the block is one too
		int ci = h->comp[b];
		h->last_dc[ci] += diff;
		blk[0] = (JCOEF)h->last_dc[ci];
		if (ffh_pos(h, &r) > end)
			WARNMS(c, JWRN_HIT_MARKER); // ran past the interval
	}
	h->r = r;
	size_t used = (ffh_pos(h, &r) + 7) / 8;
	if (h->mcus == 0 && used != h->end[h->k] && !(h->scan_end && used < h->end[h->k]))
		WARNMS2(c, JWRN_EXTRANEOUS_DATA, (unsigned)(h->end[h->k] - used), JPEG_EOI);
	return TRUE;
}

void ffh_install(ffh_dec *h, j_decompress_ptr c) {
	h->pub.start_pass = ffh_start_pass;
	h->pub.decode_mcu = ffh_decode_mcu;
	h->pub.insufficient_data = FALSE;
	h->blocks = c->blocks_in_MCU;
	for (int b = 0; b < c->blocks_in_MCU; b++) {
		int ci = c->MCU_membership[b];
		jpeg_component_info *comp = c->cur_comp_info[ci];
		h->comp[b] = ci;
		h->dc[b] = &h->tbl[0][comp->dc_tbl_no];
		h->acs[b] = &h->tbl[1][comp->ac_tbl_no];
	}
	h->r = (ffh_bits){0, 0, h->buf};
	h->k = 0;
	h->left = (long)c->restart_interval;
	h->mcus = (long)c->MCUs_per_row * (long)c->MCU_rows_in_scan;
	memset(h->last_dc, 0, sizeof h->last_dc);
	c->entropy = &h->pub;
}

// Adding restart markers to a scan. The transcoder keeps a source's scan
// when it needs no requantizing, but a scan without markers cannot be cut
// into region streams. Re-encoding it costs a full Huffman decode and encode
// in libjpeg; instead, the scan is decoded here only to find where each
// interval starts, and copied bit for bit, with three changes per interval:
// byte alignment with 1-bits, a marker, and each component's first DC
// difference coded again from zero (the prediction a marker resets). A DC
// table made for the image may have no code for that: then the standard
// table replaces it and every DC difference is coded again.

// ffh_out writes bits, stuffing a 0x00 after every 0xFF byte.
typedef struct {
	unsigned char *buf;
	size_t len, cap;
	uint64_t acc; // the last n bits are pending
	int n;
} ffh_out;

static int ffh_room(ffh_out *o, size_t more) {
	if (o->len + more <= o->cap)
		return 1;
	size_t c = o->cap ? o->cap : 4096;
	while (c < o->len + more)
		c *= 2;
	unsigned char *nb = realloc(o->buf, c);
	if (!nb)
		return 0;
	o->buf = nb;
	o->cap = c;
	return 1;
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

// ffh_dc_end returns where the DC code and value of the block at bit at end.
static size_t ffh_dc_end(const ffh_dec *h, const ffh_tbl *dc, size_t at) {
	ffh_bits q = {0, 0, h->buf + at / 8};
	ffh_refill(&q);
	ffh_skip(&q, (int)(at & 7));
	int s = ffh_symbol(dc, &q);
	return 8 * (size_t)(q.p - h->buf) - (size_t)q.cnt + (size_t)(s > 0 ? s : 0);
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
		int no = c->cur_comp_info[i]->dc_tbl_no;
		const JHUFF_TBL *t = no >= 0 && no < NUM_HUFF_TBLS ? c->dc_huff_tbl_ptrs[no] : NULL;
		if (!t)
			return 0;
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

// ffh_layout lists the blocks of an MCU of c's interleaved scan (each
// component's h×v) with their tables, after ffh_tables; it returns their
// number, 0 for more than an MCU can hold, and the MCUs in the scan.
static int ffh_layout(ffh_dec *h, j_decompress_ptr c, int comp[], const ffh_tbl *dc[], const ffh_tbl *ac[],
                      long *mcus) {
	int blocks = 0;
	for (int ci = 0; ci < c->comps_in_scan; ci++) {
		jpeg_component_info *cc = c->cur_comp_info[ci];
		for (int i = 0; i < cc->h_samp_factor * cc->v_samp_factor; i++, blocks++) {
			if (blocks == D_MAX_BLOCKS_IN_MCU)
				return 0;
			comp[blocks] = ci;
			dc[blocks] = &h->tbl[0][cc->dc_tbl_no];
			ac[blocks] = &h->tbl[1][cc->ac_tbl_no];
		}
	}
	long fw = 8L * c->max_h_samp_factor, fh = 8L * c->max_v_samp_factor;
	*mcus = ((long)c->image_width + fw - 1) / fw * (((long)c->image_height + fh - 1) / fh);
	return blocks;
}

int ffh_check(ffh_dec *h, j_decompress_ptr c) {
	long ri = (long)c->restart_interval, mcus;
	int comp[D_MAX_BLOCKS_IN_MCU];
	const ffh_tbl *dc[D_MAX_BLOCKS_IN_MCU], *ac[D_MAX_BLOCKS_IN_MCU];
	if (ri <= 0 || c->comps_in_scan < 2 || !ffh_tables(h, c))
		return 0;
	int blocks = ffh_layout(h, c, comp, dc, ac, &mcus);
	if (!blocks || h->nend != (size_t)((mcus + ri - 1) / ri))
		return 0;
	ffh_bits r = {0, 0, h->buf};
	size_t k = 0;
	for (long m = 0; m < mcus; m++) {
		if (m > 0 && m % ri == 0) { // the interval must have ended on its last byte
			if ((ffh_pos(h, &r) + 7) / 8 != h->end[k])
				return 0;
			r = (ffh_bits){0, 0, h->buf + h->end[k++]};
		}
		for (int b = 0; b < blocks; b++) {
			int diff;
			if (ffh_block(dc[b], ac[b], &r, h->discard, &diff) == FFH_BAD || ffh_pos(h, &r) > 8 * h->end[k])
				return 0;
		}
	}
	return 1; // bytes may follow the last MCU (see ffh_reset)
}

int ffh_add_restarts(ffh_dec *h, j_decompress_ptr c, const unsigned char *data, size_t len, size_t scan,
                     long ri, int std_dc, unsigned char **buf, size_t *outlen, size_t *cap) {
	if (ri <= 0 || c->restart_interval != 0 || c->progressive_mode || c->arith_code || c->data_precision != 8 ||
	    c->comps_in_scan < 2 || c->comps_in_scan != c->num_components || !ffh_tables(h, c))
		return 0;
	// The scan ends at EOI: any other marker is a layout left to libjpeg.
	size_t p = scan, se = 0;
	for (;;) {
		const unsigned char *q = memchr(data + p, 0xFF, len - p);
		if (!q)
			return 0;
		size_t at = (size_t)(q - data), r = at;
		while (r + 1 < len && data[r + 1] == 0xFF)
			r++;
		if (r + 1 >= len)
			return 0;
		p = r + 2;
		if (data[r + 1] == 0xD9) {
			se = at;
			break;
		}
		if (data[r + 1] != 0x00)
			return 0;
	}
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
			if (ffh_block(dc[b], ac[b], &r, h->discard, &diff) == FFH_BAD || ffh_pos(h, &r) > end) {
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
			size_t dc_end = ffh_dc_end(h, dc[b], at);
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
