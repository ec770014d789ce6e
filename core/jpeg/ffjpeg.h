// C side of package jpeg. Every libjpeg call happens inside one of these
// functions, below a setjmp in the same function, so a libjpeg error
// longjmps back into C and never across Go frames.
#ifndef FFJPEG_H
#define FFJPEG_H

#include <stddef.h>

enum {
	FFJ_OK = 0,
	FFJ_ERR_LIB = 1,    // libjpeg error or fatal warning; message in the state
	FFJ_ERR_SMALL = 2,  // output buffer too small
	FFJ_ERR_REGION = 3, // crop rectangle not inside the image
	FFJ_ERR_NOMEM = 4,
	FFJ_ERR_FORMAT = 5  // a JPEG the transcoder leaves to a pixel re-encode
};

// ffj_geom carries one decode request in and its geometry out.
typedef struct {
	int scale_num;            // in: DCT scale numerator over 8; out: the one used
	int cx0, cy0, cx1, cy1;   // in: crop in full-resolution pixels; cx1 < 0: whole image
	int img_w, img_h;         // out: full-resolution size
	int out_w, out_h;         // out: size of the whole image at this scale
	int buf_x, buf_y;         // out: scaled position of the first decoded pixel
	int buf_w, buf_h;         // out: decoded columns and rows (rows are buf_w*3 bytes)
	// Timing (when timed is set): the entropy decoding, marker scan of a
	// region stream included, and the whole call, in one clock's ticks
	// (the CPU's time-stamp counter on x86, else nanoseconds); their ratio
	// splits the call's time.
	int timed;                           // in
	unsigned long long entropy_ticks;    // out
	unsigned long long total_ticks;      // out
	int share; // in: 0, or FFJ_SHARE_KEEP or FFJ_SHARE_READ (ffj_share_reset)
} ffj_geom;

typedef struct ffj_dec ffj_dec;

ffj_dec *ffj_new(void);
void ffj_free(ffj_dec *d);
const char *ffj_msg(ffj_dec *d);
int ffj_decode(ffj_dec *d, const unsigned char *data, unsigned long len,
               ffj_geom *g, unsigned char *out, size_t cap);

// ffj_cut_regions turns the region streams of JPEGs with restart markers
// on (the default) or off, for tests.
void ffj_cut_regions(ffj_dec *d, int on);
// ffj_region_cut reports whether the last ffj_decode decoded a region stream,
// and ffj_region_table_cap how many restart intervals its table has room for.
int ffj_region_cut(ffj_dec *d);
// ffj_share_reset starts a new image for decodes that share its entropy
// decoding, dropping the coefficients cached for the last one. A decode of
// that image with ffj_geom.share set copies the restart intervals it needs
// from the cache where they are, and decodes the others: with
// FFJ_SHARE_KEEP into the cache, for the decodes to come; with
// FFJ_SHARE_READ (the image's last decode) not.
enum { FFJ_SHARE_KEEP = 1, FFJ_SHARE_READ = 2 };
void ffj_share_reset(ffj_dec *d);
// ffj_interval_decodes copies to counts[0:n) how many times each restart
// interval of the shared image's scan was entropy-decoded since
// ffj_share_reset, and returns the number of intervals seen (for tests).
size_t ffj_interval_decodes(ffj_dec *d, int *counts, size_t n);
// ffj_transcode_spliced reports whether the last ffj_transcode added restart
// markers to the source's scan without re-encoding it.
int ffj_transcode_spliced(ffj_dec *d);
size_t ffj_region_table_cap(ffj_dec *d);

// ffj_entropy entropy-decodes the first rows (at scale scale_num/8) of
// data without the IDCT: the Huffman share of a decode, for profiling. After
// a decode that cut a region stream (see ffint.h) it decodes that stream
// instead, rows still counted in the whole image.
int ffj_entropy(ffj_dec *d, const unsigned char *data, unsigned long len, int scale_num, int rows);

int ffj_header(ffj_dec *d, const unsigned char *data, unsigned long len,
               int *w, int *h);

// ffj_encode compresses w×h pixels of ncomp bytes each (in_cs is a libjpeg
// J_COLOR_SPACE; jpeg_cs the colour space to store, or -1 for libjpeg's
// default; hs×vs the luma sampling factors; optimize for Huffman tables
// made for the image; restart the restart interval in MCUs, 0 for
// ffj_auto_restart's, negative for none). On success *out is a malloc'ed
// buffer of *outlen bytes.
int ffj_encode(const unsigned char *pix, int w, int h, int ncomp, int in_cs,
               int jpeg_cs, int quality, int hs, int vs, int progressive, int optimize, int restart,
               unsigned char **out, size_t *outlen, char *msg, size_t msglen);

// ffj_verify entropy-decodes all of data (every coefficient, no IDCT): a
// JPEG that passes decodes cleanly.
int ffj_verify(ffj_dec *d, const unsigned char *data, unsigned long len);

// ffj_transcode re-encodes a 4:2:0 YCbCr JPEG at the given quality without
// leaving the DCT domain (FFJ_ERR_FORMAT for any other JPEG), with restart
// markers lined up with MCU rows; keep_scan keeps a source scan that needs
// no requantizing even without them. On success *out is a malloc'ed buffer
// of *outlen bytes.
int ffj_transcode(ffj_dec *d, const unsigned char *data, unsigned long len, int quality, int keep_scan,
                  unsigned char **out, size_t *outlen);

// ffj_requantize rewrites n blocks of 64 coefficients (libjpeg's JCOEF)
// quantized by the steps from as quantized by to, with from[k] <= to[k].
void ffj_requantize(short *coef, long n, const unsigned short *from, const unsigned short *to);

// ffj_coefs_fit reports whether n blocks of 64 coefficients fit baseline
// Huffman coding of 8-bit samples (the transcoder's last check).
int ffj_coefs_fit(const short *coef, long n);

#endif
