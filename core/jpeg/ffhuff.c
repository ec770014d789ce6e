// Huffman decoding of region streams. libjpeg-turbo decodes every MCU of a
// scan with restart markers on its slow path (it takes its fast path only
// in scans without them), which made the intervals a crop needs cost about
// as much per byte as the whole scan did without markers. A region stream
// (ffregion.c) knows where each of its intervals starts and ends, so this
// decoder takes them unstuffed, back to back, and replaces libjpeg's
// entropy decoder for that scan: no marker handling at all, a 64-bit bit
// buffer, and one lookup for the run, size and value of most AC codes.
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
#include "ffscan.h"
#include "ffhuff.h"


ffh_dec *ffh_new(void) { return calloc(1, sizeof(ffh_dec)); }

void ffh_free(ffh_dec *h) {
	if (!h)
		return;
	free(h->buf);
	free(h->end);
	free(h->gidx);
	free(h->slot);
	free(h->store);
	free(h);
}


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
	h->use_cache = 0;
}

// The cache holds at most this many bytes of blocks (3 bytes per pixel in
// 4:2:0: an image of about 85 megapixels); intervals past it are decoded
// without being kept.
#define FFH_CACHE_MAX ((size_t)256 << 20)

void ffh_cache_reset(ffh_dec *h) {
	h->nslot = 0;
	h->store_len = 0;
}

void ffh_use_cache(ffh_dec *h, long scan_intervals, int fill) {
	h->use_cache = 1;
	h->fill = fill;
	h->scan_last = scan_intervals - 1;
}

int ffh_append_at(ffh_dec *h, long s, const unsigned char *p, size_t n) {
	if (!h->use_cache)
		return ffh_append(h, p, n);
	// The slots grow with the intervals seen, which have all been found
	// between markers: a header claiming a huge image costs nothing more.
	if ((size_t)s >= h->nslot) {
		if (!ffj_reserve((void **)&h->slot, &h->slot_cap, (size_t)s + 1, sizeof *h->slot))
			return 0;
		memset(h->slot + h->nslot, 0, ((size_t)s + 1 - h->nslot) * sizeof *h->slot);
		h->nslot = (size_t)s + 1;
	}
	if (!ffj_reserve((void **)&h->gidx, &h->gidx_cap, h->nend + 1, sizeof *h->gidx))
		return 0;
	h->gidx[h->nend] = s;
	return ffh_append(h, p, h->slot[s].valid ? 0 : n);
}

size_t ffh_interval_decodes(ffh_dec *h, int *counts, size_t n) {
	for (size_t i = 0; i < n && i < h->nslot; i++)
		counts[i] = h->slot[i].decodes;
	return h->nslot;
}

// ffh_begin starts interval k (of mcus MCUs) of a stream that uses the
// cache: its blocks come from the cache, or are decoded into it.
static void ffh_begin(ffh_dec *h, long mcus) {
	ffh_slot *s = &h->slot[h->gidx[h->k]];
	size_t start = h->k ? h->end[h->k - 1] : 0;
	h->from_cache = s->valid && h->end[h->k] == start; // appended without its bytes
	h->caching = 0;
	if (h->from_cache) {
		h->cur = h->store + s->off;
		return;
	}
	s->decodes++;
	if (s->valid || !h->fill)
		return; // cached after this stream was cut (ffj_entropy decodes it again), or not to be kept
	// Decoded into zeroed blocks: libjpeg zeroes its MCU buffer only for
	// the MCUs in the columns jpeg_crop_scanline kept.
	size_t n = (size_t)mcus * (size_t)h->blocks * DCTSIZE2;
	if ((h->store_len + n) * sizeof(JCOEF) > FFH_CACHE_MAX ||
	    !ffj_reserve((void **)&h->store, &h->store_cap, h->store_len + n, sizeof(JCOEF)))
		return;
	h->cur = h->store + h->store_len;
	memset(h->cur, 0, n * sizeof(JCOEF));
	h->caching = 1;
}

// ffh_cached keeps the interval just decoded into the cache when it ended
// on its last byte, or before it at the end of the scan (as
// ffh_decode_mcu's checks want it); used is the bytes its codes took.
static void ffh_cached(ffh_dec *h, size_t used) {
	size_t end = h->end[h->k];
	if (used != end && !(used < end && h->gidx[h->k] == h->scan_last))
		return; // reported when the next interval starts or the stream ends
	ffh_slot *s = &h->slot[h->gidx[h->k]];
	s->off = h->store_len;
	s->valid = 1;
	h->store_len = (size_t)(h->cur - h->store);
	h->caching = 0;
}

void ffh_finish(ffh_dec *h) {
	if (!h->use_cache || !h->caching || h->left == 0)
		return;
	long n = h->left < h->mcus ? h->left : h->mcus;
	ffh_bits r = h->r;
	const size_t end = 8 * h->end[h->k];
	for (long m = 0; m < n; m++, h->cur += h->blocks * DCTSIZE2) {
		for (int b = 0; b < h->blocks; b++) {
			JCOEF *blk = h->cur + b * DCTSIZE2;
			int diff;
			if (ffh_block(h->dc[b], h->acs[b], &r, blk, &diff) == FFH_BAD || ffh_pos(h, &r) > end)
				return; // left to the decode that needs it, to report
			int ci = h->comp[b];
			h->last_dc[ci] += diff;
			blk[0] = (JCOEF)h->last_dc[ci];
		}
	}
	h->left -= n;
	h->mcus -= n;
	h->r = r;
	ffh_cached(h, (ffh_pos(h, &r) + 7) / 8);
}

int ffh_append(ffh_dec *h, const unsigned char *p, size_t n) {
	if (!ffj_reserve((void **)&h->buf, &h->cap, h->len + n + FFH_PAD, 1) ||
	    !ffj_reserve((void **)&h->end, &h->end_cap, h->nend + 1, sizeof *h->end))
		return 0;
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

static void ffh_start_pass(j_decompress_ptr c) { (void)c; }

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
		if (h->use_cache)
			ffh_begin(h, h->left < h->mcus + 1 ? h->left : h->mcus + 1);
	}
	h->left--;
	if (h->from_cache) { // no bytes: the checks below pass as they did
		if (mcu)
			for (int b = 0; b < h->blocks; b++)
				memcpy(mcu[b][0], h->cur + b * DCTSIZE2, sizeof(JBLOCK));
		h->cur += h->blocks * DCTSIZE2;
		h->r = r;
		return TRUE;
	}
	const size_t end = 8 * h->end[h->k];
	for (int b = 0; b < h->blocks; b++) {
		JCOEF *blk = h->caching ? h->cur + b * DCTSIZE2 : mcu ? mcu[b][0] : h->discard;
		int diff;
		if (ffh_block(h->dc[b], h->acs[b], &r, blk, &diff) == FFH_BAD)
			WARNMS(c, JWRN_HUFF_BAD_CODE); // a run past the block is one too
		int ci = h->comp[b];
		h->last_dc[ci] += diff;
		blk[0] = (JCOEF)h->last_dc[ci];
		if (ffh_pos(h, &r) > end)
			WARNMS(c, JWRN_HIT_MARKER); // ran past the interval
		if (h->caching && mcu)
			memcpy(mcu[b][0], blk, sizeof(JBLOCK));
	}
	h->r = r;
	size_t used = (ffh_pos(h, &r) + 7) / 8;
	if (h->caching) {
		h->cur += h->blocks * DCTSIZE2;
		if (h->left == 0 || h->mcus == 0)
			ffh_cached(h, used);
	}
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
	h->from_cache = h->caching = 0;
	if (h->use_cache && h->nend > 0)
		ffh_begin(h, h->left < h->mcus ? h->left : h->mcus);
	c->entropy = &h->pub;
}

int ffh_layout(ffh_dec *h, j_decompress_ptr c, int comp[], const ffh_tbl *dc[], const ffh_tbl *ac[], long *mcus) {
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
	int fw, fh;
	long mw, mh;
	ffj_mcu_grid(c, &fw, &fh, &mw, &mh);
	*mcus = mw * mh;
	return blocks;
}


int ffh_check(ffh_dec *h, j_decompress_ptr c) {
	long ri = (long)c->restart_interval, mcus;
	int comp[D_MAX_BLOCKS_IN_MCU];
	const ffh_tbl *dc[D_MAX_BLOCKS_IN_MCU], *ac[D_MAX_BLOCKS_IN_MCU];
	if (ri <= 0)
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
