#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>
#include <jpegint.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#else
#include <time.h>
#endif

#include "ffjpeg.h"
#include "ffint.h"

// Decoders cap libjpeg's big buffers (see ffj_new).
#define FFJ_MAX_MEMORY (1L << 30)

static void ffj_error_exit(j_common_ptr c) {
	ffj_err *e = (ffj_err *)c->err;
	if (c->err->msg_code == JERR_NO_BACKING_STORE) // libjpeg's way to say "over max_memory_to_use"
		snprintf(e->msg, sizeof e->msg, "image needs more than %ld MiB of buffers", FFJ_MAX_MEMORY >> 20);
	else
		(*c->err->format_message)(c, e->msg);
	longjmp(e->jb, 1);
}

// Warnings mean corrupt or truncated data (libjpeg then pads with gray or
// guesses), except for a few about metadata. Treat the former as errors so
// damaged files never decode to silently wrong pixels.
static void ffj_emit_message(j_common_ptr c, int level) {
	if (level >= 0)
		return; // trace message
	switch (c->err->msg_code) {
	case JWRN_ADOBE_XFORM:
	case JWRN_JFIF_MAJOR:
	case JWRN_BOGUS_ICC:
		return;
	}
	ffj_error_exit(c);
}

static void ffj_output_message(j_common_ptr c) { (void)c; }

// ffj_die fails with a message of our own.
static void ffj_die(j_common_ptr c, const char *msg) {
	ffj_err *e = (ffj_err *)c->err;
	snprintf(e->msg, sizeof e->msg, "%s", msg);
	longjmp(e->jb, 1);
}

void ffj_init_err(ffj_err *e) {
	jpeg_std_error(&e->pub);
	e->pub.error_exit = ffj_error_exit;
	e->pub.emit_message = ffj_emit_message;
	e->pub.output_message = ffj_output_message;
	e->msg[0] = 0;
}

ffj_dec *ffj_new(void) {
	ffj_dec *volatile d = calloc(1, sizeof *d); // volatile: read after longjmp
	if (!d)
		return NULL;
	d->cinfo.err = &d->err.pub;
	ffj_init_err(&d->err);
	if (setjmp(d->err.jb)) {
		jpeg_destroy_decompress(&d->cinfo);
		free(d);
		return NULL;
	}
	jpeg_create_decompress(&d->cinfo);
	d->huff = ffh_new();
	if (!d->huff)
		longjmp(d->err.jb, 1);
	// Bound whole-image buffers (progressive files) so a corrupt header
	// claiming 65535x65535 fails cleanly instead of exhausting memory.
	d->cinfo.mem->max_memory_to_use = FFJ_MAX_MEMORY;
	return d;
}

void ffj_free(ffj_dec *d) {
	if (!d)
		return;
	jpeg_destroy_decompress(&d->cinfo);
	ffh_free(d->huff);
	free(d->seg);
	free(d->region);
	free(d);
}

void ffj_cut_regions(ffj_dec *d, int on) { d->no_region = !on; }

int ffj_region_cut(ffj_dec *d) { return d->region_used; }

void ffj_share_reset(ffj_dec *d) { ffh_cache_reset(d->huff); }

size_t ffj_interval_decodes(ffj_dec *d, int *counts, size_t n) { return ffh_interval_decodes(d->huff, counts, n); }

int ffj_transcode_spliced(ffj_dec *d) { return d->spliced; }

size_t ffj_region_table_cap(ffj_dec *d) { return d->seg_cap / 2; }

const char *ffj_msg(ffj_dec *d) { return d->err.msg; }

// The source manager points at Go memory only for the duration of a call.
static void ffj_forget_src(j_decompress_ptr c) {
	if (c->src) {
		c->src->next_input_byte = NULL;
		c->src->bytes_in_buffer = 0;
	}
}

// Adobe CMYK JPEGs store inverted inks, so R = C'·K'/255 on the stored
// values (the conversion OpenCV and Pillow use).
static void ffj_cmyk_to_rgb(const JSAMPLE *in, unsigned char *out, int w) {
	for (int i = 0; i < w; i++, in += 4, out += 3) {
		unsigned k = in[3];
		out[0] = (unsigned char)((in[0] * k + 127) / 255);
		out[1] = (unsigned char)((in[1] * k + 127) / 255);
		out[2] = (unsigned char)((in[2] * k + 127) / 255);
	}
}

// ffj_upsamples reports whether any component needs upsampling after
// scaled IDCT (valid after jpeg_calc_output_dimensions).
static int ffj_upsamples(j_decompress_ptr c) {
	for (int i = 0; i < c->num_components; i++) {
		jpeg_component_info *ci = &c->comp_info[i];
		if (ci->h_samp_factor * ci->DCT_scaled_size != c->max_h_samp_factor * c->min_DCT_scaled_size ||
		    ci->v_samp_factor * ci->DCT_scaled_size != c->max_v_samp_factor * c->min_DCT_scaled_size)
			return 1;
	}
	return 0;
}

// ffj_setup sets the output a decode asks for, after jpeg_read_header.
static void ffj_setup(j_decompress_ptr c, int cmyk, int scale_num) {
	c->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
	c->dct_method = JDCT_ISLOW;
	c->scale_num = (unsigned)scale_num;
	c->scale_denom = 8;
	jpeg_calc_output_dimensions(c);
}

// ffj_ticks reads the clock of timed decodes: the time-stamp counter where
// there is one (a few nanoseconds to read, against 20 or more for
// clock_gettime, and a timed decode reads it twice per MCU).
static inline unsigned long long ffj_ticks(void) {
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
#endif
}

// ffj_tick_cost is what reading the clock twice adds to an interval: the
// least of a few back-to-back readings, taken once (threads racing to set it
// compute about the same value). Subtracted from every timed MCU, it keeps
// the timing's own cost out of the entropy share.
static unsigned long long ffj_tick_cost_v;
static int ffj_tick_cost_set;

static unsigned long long ffj_tick_cost(void) {
	if (!__atomic_load_n(&ffj_tick_cost_set, __ATOMIC_ACQUIRE)) {
		unsigned long long best = ~0ull;
		for (int i = 0; i < 64; i++) {
			unsigned long long a = ffj_ticks(), b = ffj_ticks();
			if (b - a < best)
				best = b - a;
		}
		__atomic_store_n(&ffj_tick_cost_v, best, __ATOMIC_RELAXED);
		__atomic_store_n(&ffj_tick_cost_set, 1, __ATOMIC_RELEASE);
	}
	return __atomic_load_n(&ffj_tick_cost_v, __ATOMIC_RELAXED);
}

// ffj_timed_decode_mcu stands in for the entropy decoder's decode_mcu
// during a timed decode. d starts with its cinfo, so c is d.
static boolean ffj_timed_decode_mcu(j_decompress_ptr c, JBLOCKROW *mcu) {
	ffj_dec *d = (ffj_dec *)c;
	unsigned long long t = ffj_ticks();
	boolean ok = d->decode_mcu(c, mcu);
	unsigned long long dt = ffj_ticks() - t;
	d->entropy_ticks += dt > d->tick_cost ? dt - d->tick_cost : 0;
	return ok;
}

int ffj_fail(j_decompress_ptr c, int code) {
	jpeg_abort_decompress(c);
	ffj_forget_src(c);
	return code;
}

int ffj_decode(ffj_dec *d, const unsigned char *data, unsigned long len,
               ffj_geom *g, unsigned char *out, size_t cap) {
	j_decompress_ptr c = &d->cinfo;
	d->err.msg[0] = 0;
	d->region_used = 0;
	d->share = g->share;
	d->entropy_ticks = 0;
	unsigned long long t0 = g->timed ? ffj_ticks() : 0, t;
	if (setjmp(d->err.jb))
		return ffj_fail(c, FFJ_ERR_LIB);

	jpeg_mem_src(c, data, len);
	jpeg_read_header(c, TRUE);
	g->img_w = (int)c->image_width;
	g->img_h = (int)c->image_height;
	if (g->cx1 < 0) {
		g->cx0 = g->cy0 = 0;
		g->cx1 = g->img_w;
		g->cy1 = g->img_h;
	}
	if (g->cx0 < 0 || g->cy0 < 0 || g->cx0 >= g->cx1 || g->cy0 >= g->cy1 ||
	    g->cx1 > g->img_w || g->cy1 > g->img_h)
		return ffj_fail(c, FFJ_ERR_REGION);

	int cmyk = c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK;
	ffj_setup(c, cmyk, g->scale_num);
	// At 1/8 libjpeg-turbo upsamples chroma by plain replication (fancy
	// upsampling needs IDCT blocks of 2+ pixels). 4:2:0 and 4:4:4 avoid
	// upsampling there (chroma gets 2x2 IDCTs), but 4:2:2, 4:4:0 and 4:1:1
	// would get blocky colour; decode those at 1/4 instead.
	if (c->min_DCT_scaled_size == 1 && ffj_upsamples(c)) {
		c->scale_num = 2;
		g->scale_num = 2;
		jpeg_calc_output_dimensions(c);
	}
	g->out_w = (int)c->output_width;
	g->out_h = (int)c->output_height;

	// Scaled rows and columns touched by the crop: floor of the start,
	// ceiling of the end (output_width rounds up, so the end fits).
	long s = g->scale_num;
	int x0 = (int)(g->cx0 * s / 8), x1 = (int)((g->cx1 * s + 7) / 8);
	int y0 = (int)(g->cy0 * s / 8), y1 = (int)((g->cy1 * s + 7) / 8);
	if (x1 > g->out_w) x1 = g->out_w;
	if (y1 > g->out_h) y1 = g->out_h;
	// Widen by a column on each side: fancy chroma upsampling treats the
	// edges of a cropped decode as image edges, which would change the
	// first and last columns of the crop. (Rows need no margin: libjpeg
	// keeps context rows across jpeg_skip_scanlines.)
	if (x0 > 0) x0--;
	if (x1 < g->out_w) x1++;
	// jpeg_crop_scanline switches to plain (box) upsampling when a chroma
	// row becomes narrower than 2 samples; 8 columns avoid that even for
	// 4:1:1 files.
	if (x1 - x0 < 8) {
		x1 = x0 + 8 < g->out_w ? x0 + 8 : g->out_w;
		x0 = x1 - 8 > 0 ? x1 - 8 : 0;
	}
	// jpeg_crop_scanline widens the span by less than one iMCU (<= 32
	// pixels); check against that bound before doing any real work.
	size_t maxw = (size_t)(x1 - x0) + 31;
	if (maxw > (size_t)g->out_w) maxw = (size_t)g->out_w;
	if (maxw * 3 * (size_t)(y1 - y0) > cap) {
		g->buf_w = (int)maxw;
		g->buf_h = y1 - y0;
		return ffj_fail(c, FFJ_ERR_SMALL);
	}

	// With restart markers, decode a JPEG of only the MCUs under the crop;
	// (ox, oy) is where its first pixel lies in the whole scaled image.
	int ox = 0, oy = 0;
	t = g->timed ? ffj_ticks() : 0;
	d->region_used = ffj_region_stream(d, data, len, x0, y0, x1, y1, &ox, &oy);
	d->region_oy = oy;
	if (d->region_used) {
		jpeg_abort_decompress(c);
		jpeg_mem_src(c, d->region, d->region_len);
		jpeg_read_header(c, TRUE);
		ffj_setup(c, cmyk, g->scale_num);
	}
	if (g->timed) // the marker scan and the cut are the entropy-coded data's
		d->entropy_ticks += ffj_ticks() - t;
	// A file of several scans (progressive) is entropy-decoded whole inside
	// jpeg_start_decompress; a single scan MCU by MCU as rows are read.
	// (Asked only when timed: the untimed path stays as it was.)
	int multiscan = g->timed && jpeg_has_multiple_scans(c);
	t = g->timed && multiscan ? ffj_ticks() : 0;
	jpeg_start_decompress(c);
	if (g->timed && multiscan)
		d->entropy_ticks += ffj_ticks() - t;
	if (d->region_used)
		ffh_install(d->huff, c);
	if (g->timed && !multiscan) {
		d->tick_cost = ffj_tick_cost();
		d->decode_mcu = c->entropy->decode_mcu;
		c->entropy->decode_mcu = ffj_timed_decode_mcu;
	}
	JDIMENSION xoff = (JDIMENSION)(x0 - ox), w = (JDIMENSION)(x1 - x0);
	if (w != c->output_width)
		jpeg_crop_scanline(c, &xoff, &w); // aligns xoff down to an iMCU
	g->buf_x = ox + (int)xoff;
	g->buf_w = (int)w;
	size_t stride = (size_t)w * 3;
	if (stride * (size_t)(y1 - y0) > cap)
		return ffj_fail(c, FFJ_ERR_SMALL); // unreachable given the bound above

	g->buf_y = y0;
	g->buf_h = y1 - y0;
	y0 -= oy; // rows of the stream being decoded from here on
	y1 -= oy;
	if (y0 > 0 && jpeg_skip_scanlines(c, (JDIMENSION)y0) != (JDIMENSION)y0)
		ffj_die((j_common_ptr)c, "cannot skip to the first cropped row");

	JSAMPARRAY tmp = NULL;
	if (cmyk)
		tmp = (*c->mem->alloc_sarray)((j_common_ptr)c, JPOOL_IMAGE, w * 4, 1);
	while (c->output_scanline < (JDIMENSION)y1) {
		unsigned char *dst = out + (size_t)(c->output_scanline - y0) * stride;
		if (cmyk) {
			if (jpeg_read_scanlines(c, tmp, 1) != 1)
				ffj_die((j_common_ptr)c, "no scanline returned");
			ffj_cmyk_to_rgb(tmp[0], dst, (int)w);
			continue;
		}
		JSAMPROW rows[16];
		int n = y1 - (int)c->output_scanline;
		if (n > 16) n = 16;
		for (int i = 0; i < n; i++)
			rows[i] = dst + (size_t)i * stride;
		if (jpeg_read_scanlines(c, rows, (JDIMENSION)n) == 0)
			ffj_die((j_common_ptr)c, "no scanline returned");
	}

	// Reading to the end lets libjpeg check the rest of the stream (trailing
	// garbage, missing EOI); an early stop just drops the decoder state.
	if (c->output_scanline == c->output_height) {
		jpeg_finish_decompress(c);
	} else {
		if (d->region_used && d->share) {
			t = g->timed ? ffj_ticks() : 0;
			ffh_finish(d->huff);
			if (g->timed)
				d->entropy_ticks += ffj_ticks() - t;
		}
		jpeg_abort_decompress(c);
	}
	ffj_forget_src(c);
	if (g->timed) {
		g->entropy_ticks = d->entropy_ticks;
		g->total_ticks = ffj_ticks() - t0;
	}
	return FFJ_OK;
}

int ffj_entropy(ffj_dec *d, const unsigned char *data, unsigned long len, int scale_num, int rows) {
	j_decompress_ptr c = &d->cinfo;
	d->err.msg[0] = 0;
	if (setjmp(d->err.jb))
		return ffj_fail(c, FFJ_ERR_LIB);
	if (d->region_used) { // what the last decode entropy-decoded
		data = d->region;
		len = (unsigned long)d->region_len;
		rows -= d->region_oy;
	}
	jpeg_mem_src(c, data, len);
	jpeg_read_header(c, TRUE);
	c->out_color_space = JCS_RGB;
	c->dct_method = JDCT_ISLOW;
	c->scale_num = (unsigned)scale_num;
	c->scale_denom = 8;
	jpeg_start_decompress(c);
	if (d->region_used)
		ffh_install(d->huff, c);
	// Skipped rows are entropy-decoded only (libjpeg-turbo discards their
	// coefficients without an IDCT).
	if (rows > (int)c->output_height)
		rows = (int)c->output_height;
	jpeg_skip_scanlines(c, (JDIMENSION)rows);
	jpeg_abort_decompress(c);
	ffj_forget_src(c);
	return FFJ_OK;
}

int ffj_header(ffj_dec *d, const unsigned char *data, unsigned long len,
               int *w, int *h) {
	j_decompress_ptr c = &d->cinfo;
	d->err.msg[0] = 0;
	if (setjmp(d->err.jb))
		return ffj_fail(c, FFJ_ERR_LIB);
	jpeg_mem_src(c, data, len);
	jpeg_read_header(c, TRUE);
	*w = (int)c->image_width;
	*h = (int)c->image_height;
	jpeg_abort_decompress(c);
	ffj_forget_src(c);
	return FFJ_OK;
}
