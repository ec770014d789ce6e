// Internal to package jpeg's C files (never included by Go): the error
// manager, the decoder's state and the destination manager, shared by the
// decoder, the encoder and the transcoder. Include after <setjmp.h>,
// <stdio.h> and <jpeglib.h>.
#ifndef FFINT_H
#define FFINT_H

// Error manager: error_exit and fatal warnings format the message and
// longjmp to the setjmp of the ffj_* function that called libjpeg. One may
// serve a decompressor and a compressor together (the transcoder does).
typedef struct {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
	char msg[JMSG_LENGTH_MAX];
} ffj_err;

void ffj_init_err(ffj_err *e);

// ffhuff.c: a Huffman decoder for the intervals of a region stream, which
// takes the place of libjpeg's (see there why).
typedef struct ffh_dec ffh_dec;
ffh_dec *ffh_new(void);
void ffh_free(ffh_dec *h);
// ffh_tables derives the Huffman tables of the scan c has just read the
// header of; 0 when one is missing or bad (then libjpeg decodes the scan).
int ffh_tables(ffh_dec *h, j_decompress_ptr c);
// ffh_reset empties h, and ffh_append adds the restart interval p[0:n)
// (entropy-coded bytes, no marker) after the ones added before; 0 when out
// of memory. scan_end says the last interval to be added ends the scan:
// bytes may follow its last MCU's codes there, as libjpeg lets them.
void ffh_reset(ffh_dec *h, int scan_end);
int ffh_append(ffh_dec *h, const unsigned char *p, size_t n);
// The coefficient cache serves several decodes of one image: ffh_cache_reset
// starts a new image; ffh_use_cache, after ffh_reset, makes the stream being
// built use it (its scan has scan_intervals intervals; with fill it also
// keeps the intervals it decodes, for later decodes), and ffh_append_at
// then adds interval s of the scan: one already in the cache without its
// bytes, since its blocks are copied from there. An interval enters the
// cache once it has decoded cleanly and ended on its last byte, so one
// that is damaged is decoded, and reported, by every decode that needs it.
// ffh_finish, when a decode that fills the cache stops inside an interval
// (one that spans MCU rows), decodes the rest of it into the cache for the
// decodes to come; quietly, since this decode does not need it: damage is
// left for a decode that does.
void ffh_cache_reset(ffh_dec *h);
void ffh_use_cache(ffh_dec *h, long scan_intervals, int fill);
int ffh_append_at(ffh_dec *h, long s, const unsigned char *p, size_t n);
void ffh_finish(ffh_dec *h);
// ffh_interval_decodes copies to counts[0:n) how many times each interval
// of the cached image's scan was entropy-decoded, and returns how many
// intervals it has seen (for tests).
size_t ffh_interval_decodes(ffh_dec *h, int *counts, size_t n);
// ffh_install makes h c's entropy decoder for the scan just started
// (after jpeg_start_decompress), decoding the intervals appended to h.
void ffh_install(ffh_dec *h, j_decompress_ptr c);
// ffh_check reports whether the intervals appended to h are the whole
// scan of c (its header read, restart markers every c->restart_interval
// MCUs, ffh_tables done) and each decodes cleanly and ends on its last
// byte, as ffh_install's decoder requires of them.
int ffh_check(ffh_dec *h, j_decompress_ptr c);
// ffsplice.c: ffh_add_restarts appends to (*buf)[0:*outlen) (of *cap bytes, realloc'ed
// as needed) the scan data[scan:len) of the JPEG whose header c has read,
// with restart markers every ri MCUs, up to its EOI (not included), after
// ffh_tables. With
// std_dc every DC difference is coded again with ffh_std_dc (the caller
// writes ffh_std_dc_segment for each DC table slot the scan uses); without,
// only each interval's first, with the source's table. Returns 0, writing
// nothing, unless the scan is a clean baseline interleaved one without
// markers and the DC table codes every difference it needs.
int ffh_add_restarts(ffh_dec *h, j_decompress_ptr c, const unsigned char *data, size_t len, size_t scan,
                     long ri, int std_dc, unsigned char **buf, size_t *outlen, size_t *cap);
// ffh_dc_complete reports whether the DC tables of c's scan (after
// ffh_tables) code every size of difference 8-bit samples have (0-11), so
// a splice can keep them.
int ffh_dc_complete(j_decompress_ptr c);
// ffh_std_dc_segment writes a DHT segment defining ffh_std_dc as DC table
// slot, FFH_STD_DC_SEGMENT bytes, and returns that length.
#define FFH_STD_DC_SEGMENT 33
size_t ffh_std_dc_segment(unsigned char *out, int slot);

struct ffj_dec {
	struct jpeg_decompress_struct cinfo;
	ffj_err err;
	int no_region;          // tests: never cut a region stream (ffj_region_stream)
	int share;              // this ffj_decode's ffj_geom.share
	size_t *seg;            // restart intervals' [start, end) offsets
	size_t seg_cap;         // elements of seg
	unsigned char *region;  // the last region stream's header (its scan is in huff)
	size_t region_cap, region_len;
	ffh_dec *huff;
	int region_used;        // the last ffj_decode decoded region, from scaled row region_oy
	int region_oy;
	// A timed ffj_decode wraps the entropy decoder's decode_mcu (saved
	// here) to add up its ticks.
	boolean (*decode_mcu)(j_decompress_ptr c, JBLOCKROW *mcu);
	unsigned long long entropy_ticks;
	unsigned long long tick_cost; // of a clock reading pair (ffj_tick_cost)
	int spliced;            // the last ffj_transcode spliced markers in (fft_splice)
};

// ffj_region_stream: when the scan whose header d has just read (from
// data[0:len], at scale d->cinfo.scale_num) has restart markers that line
// up with MCU rows, it builds a JPEG of only the MCUs under the scaled rows
// [y0, y1) and columns [x0, x1), and returns 1 with (*ox, *oy) the scaled
// position of its first pixel in the whole image: its header in d->region,
// its restart intervals in d->huff, to be decoded with ffh_install. That
// gives those rows and columns exactly as decoding data would. The region
// may be the whole image: the Huffman decoder alone is worth it. Returns 0
// (use data) when the markers do not line up or are out of sequence.
int ffj_region_stream(ffj_dec *d, const unsigned char *data, size_t len, int x0, int y0, int x1, int y1,
                      int *ox, int *oy);

// ffj_scan_clean checks the restart intervals of the interleaved baseline
// scan at data[scan:len) of the JPEG whose header d has read, as the
// region decoder (ffh_install) would decode them: 1 when each decodes
// cleanly and ends on its last byte, -1 when one does not, 0 when the scan
// is none the region decoder takes (no markers, or not in sequence, or
// tables missing). libjpeg lets a few stray bytes before a marker pass
// when its bit buffer has read up to the marker; the region decoder does
// not, so what the writer keeps or verifies must not give -1.
int ffj_scan_clean(ffj_dec *d, const unsigned char *data, size_t len, size_t scan);

// ffj_fail drops the decoder's state after an error and returns code.
int ffj_fail(j_decompress_ptr c, int code);

// A destination manager writing into a malloc'ed buffer we own, so that it
// can be freed on the error path too (jpeg_mem_dest hides its buffer).
typedef struct {
	struct jpeg_destination_mgr pub;
	unsigned char *buf;
	size_t cap;
} ffj_dest;

// ffj_set_dest makes d, holding a malloc'ed buffer of d->cap bytes, c's
// destination; it doubles the buffer as needed.
void ffj_set_dest(j_compress_ptr c, ffj_dest *d);

// The writer's JPEGs carry restart markers so that a crop decodes only the
// intervals under it (ffj_region_stream). ffj_auto_restart picks the
// interval for c (after its size and sampling are set): the largest number
// of MCUs, up to FFJ_RESTART_MAX, that divides an MCU row, so that the
// intervals line up with the rows. Longer intervals cost fewer bytes and
// fewer marker reads; shorter ones let a crop leave out more.
// ffj_mcus_per_row is the MCUs in a row of c's (interleaved) scan.
#define FFJ_RESTART_MAX 4
int ffj_auto_restart(j_compress_ptr c);
long ffj_mcus_per_row(j_compress_ptr c);

#endif
