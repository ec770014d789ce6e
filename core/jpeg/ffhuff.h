// Internal to the Huffman decoder (ffhuff.c) and the restart-marker
// splice (ffsplice.c): derived tables, the decoder state, and the bit
// reader and block decoder both use. Include after ffint.h and <jpegint.h>.
#ifndef FFHUFF_H
#define FFHUFF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

// The decoder takes the place of libjpeg-turbo's entropy decoder through
// its private jpegint.h (ffh_install sets cinfo->entropy), so it depends on
// the layout of struct jpeg_entropy_decoder and on the coefficient
// controller calling decode_mcu once per MCU. Both hold through the 2.0 and
// 2.1 series (written for 2.1.5, Debian bookworm; 2.0 is the oldest series
// distributions still ship). 2.1.90 and later (the 3.0 betas and 3.x)
// insert decode_mcus and process_restart before insufficient_data, for
// lossless JPEG: a build against them would hand libjpeg a struct it reads
// wrongly. LIBJPEG_TURBO_VERSION_NUMBER (jconfig.h, through jpeglib.h) is
// MMMmmmppp; "+ 0" turns a defined-but-empty one into a clear error too.
#if !defined(LIBJPEG_TURBO_VERSION_NUMBER)
#error "core/jpeg needs libjpeg-turbo 2.0 to 2.1.x, and jconfig.h defines no LIBJPEG_TURBO_VERSION_NUMBER (IJG libjpeg?)"
#elif LIBJPEG_TURBO_VERSION_NUMBER + 0 < 2000000 || LIBJPEG_TURBO_VERSION_NUMBER + 0 >= 2001090
#error "core/jpeg's region Huffman decoder (ffhuff.c) replaces libjpeg-turbo's private entropy decoder and supports libjpeg-turbo 2.0.0 to 2.1.x only; install libjpeg62-turbo-dev 2.x (Debian bookworm: 2.1.5)"
#endif
_Static_assert(offsetof(struct jpeg_entropy_decoder, insufficient_data) == 2 * sizeof(void (*)(void)),
               "struct jpeg_entropy_decoder is not libjpeg-turbo 2.x's {start_pass, decode_mcu, insufficient_data}");

// The bit reader and block decoder must be inlined where they are used, so
// that the bit buffer stays in registers: with three callers gcc would
// otherwise call them out of line (Huffman time +15%).
#if defined(__GNUC__)
#define FFH_INLINE static inline __attribute__((always_inline))
#else
#define FFH_INLINE static inline
#endif

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

// A restart interval of the cached image's scan.
typedef struct {
	size_t off;  // its blocks in store, once valid
	int valid;   // decoded cleanly, ending on its last byte
	int decodes; // times entropy-decoded since ffh_cache_reset (tests)
} ffh_slot;

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
	// The coefficient cache (ffh_use_cache): the blocks of the intervals of
	// one image's scan that a decode has entropy-decoded, kept so that the
	// other decodes of that image (views at other crops and scales) copy
	// them instead of decoding them again.
	int use_cache;     // this stream reads the cache
	int fill;          // and fills it
	long scan_last;    // the scan's last interval (its index in the scan)
	long *gidx;        // gidx[k]: interval k's index in the scan
	size_t gidx_cap;
	ffh_slot *slot;    // per interval of the scan, up to the last one seen
	size_t nslot, slot_cap;
	JCOEF *store;      // cached blocks, 64 coefficients each, in natural order
	size_t store_len, store_cap;
	int from_cache;    // the current interval's blocks are copied from cur
	int caching;       // the current interval is decoded into cur
	JCOEF *cur;        // the current MCU's blocks in store
};


// Zigzag to natural order.
static const unsigned char ffh_natural[64] = {
	0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,
	12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28,
	35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
	58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
};

// ffh_extend is JPEG's sign extension of an s-bit value (HUFF_EXTEND).
FFH_INLINE int ffh_extend(int v, int s) { return v < (1 << (s - 1)) ? v - (1 << s) + 1 : v; }

// ffh_peek returns the 64 bits at bit pos of buf (at least 57 of them real).
FFH_INLINE uint64_t ffh_peek(const unsigned char *buf, size_t pos) {
	uint64_t v;
	memcpy(&v, buf + (pos >> 3), 8);
	return __builtin_bswap64(v) << (pos & 7);
}

// ffh_refill tops bb up to 56-63 bits.
FFH_INLINE void ffh_refill(ffh_bits *r) {
	uint64_t v;
	memcpy(&v, r->p, 8);
	r->bb |= __builtin_bswap64(v) >> r->cnt;
	r->p += (63 - r->cnt) >> 3;
	r->cnt |= 56;
}

FFH_INLINE void ffh_skip(ffh_bits *r, int n) {
	r->bb <<= n;
	r->cnt -= n;
}

// ffh_symbol decodes a symbol (bb holds at least 16 bits); -1 for a bad code.
FFH_INLINE int ffh_symbol(const ffh_tbl *t, ffh_bits *r) {
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
FFH_INLINE int ffh_value(ffh_bits *r, int s) {
	int v = ffh_extend((int)(r->bb >> (64 - s)), s);
	ffh_skip(r, s);
	return v;
}

// ffh_block decodes one block's codes: the DC difference (before
// prediction) into *diff, the AC coefficients that are not zero into blk.
// It returns 0, or FFH_BAD for a bad code or a run past the block. ffh_dc
// and ffh_ac are its two halves.
#define FFH_BAD (-1)
FFH_INLINE int ffh_dc(const ffh_tbl *dc, ffh_bits *r, int *diff) {
	if (r->cnt < 32)
		ffh_refill(r);
	int s = ffh_symbol(dc, r);
	if (s < 0)
		return FFH_BAD;
	*diff = s ? ffh_value(r, s) : 0;
	return 0;
}

FFH_INLINE int ffh_ac(const ffh_tbl *t, ffh_bits *r, JCOEF *blk);
FFH_INLINE int ffh_block(const ffh_tbl *dc, const ffh_tbl *t, ffh_bits *r, JCOEF *blk, int *diff) {
	if (ffh_dc(dc, r, diff) == FFH_BAD)
		return FFH_BAD;
	return ffh_ac(t, r, blk);
}

FFH_INLINE int ffh_ac(const ffh_tbl *t, ffh_bits *r, JCOEF *blk) {
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

// ffh_pos is the bit position of r in h->buf.
FFH_INLINE size_t ffh_pos(const ffh_dec *h, const ffh_bits *r) {
	return 8 * (size_t)(r->p - h->buf) - (size_t)r->cnt;
}

// ffh_layout lists the blocks of an MCU of c's interleaved scan (each
// component's h×v) with their tables, after ffh_tables; it returns their
// number, 0 for more than an MCU can hold, and the MCUs in the scan.
int ffh_layout(ffh_dec *h, j_decompress_ptr c, int comp[], const ffh_tbl *dc[], const ffh_tbl *ac[], long *mcus);

#endif
