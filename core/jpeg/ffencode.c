#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#include "ffjpeg.h"
#include "ffint.h"

// A destination manager writing into a malloc'ed buffer we own (see ffint.h).
static void ffj_init_dest(j_compress_ptr c) {
	ffj_dest *d = (ffj_dest *)c->dest;
	d->pub.next_output_byte = d->buf;
	d->pub.free_in_buffer = d->cap;
}

static boolean ffj_empty_dest(j_compress_ptr c) {
	ffj_dest *d = (ffj_dest *)c->dest;
	size_t used = d->cap; // libjpeg calls this only when the buffer is full
	unsigned char *nb = realloc(d->buf, d->cap * 2);
	if (!nb)
		ERREXIT1(c, JERR_OUT_OF_MEMORY, 10);
	d->buf = nb;
	d->cap *= 2;
	d->pub.next_output_byte = nb + used;
	d->pub.free_in_buffer = d->cap - used;
	return TRUE;
}

static void ffj_term_dest(j_compress_ptr c) { (void)c; }

void ffj_set_dest(j_compress_ptr c, ffj_dest *d) {
	d->pub.init_destination = ffj_init_dest;
	d->pub.empty_output_buffer = ffj_empty_dest;
	d->pub.term_destination = ffj_term_dest;
	c->dest = &d->pub;
}

long ffj_mcus_per_row(j_compress_ptr c) {
	int hmax = 1;
	if (c->num_components > 1)
		for (int i = 0; i < c->num_components; i++)
			if (c->comp_info[i].h_samp_factor > hmax)
				hmax = c->comp_info[i].h_samp_factor;
	return ((long)c->image_width + 8 * hmax - 1) / (8 * hmax);
}

int ffj_auto_restart(j_compress_ptr c) {
	long mw = ffj_mcus_per_row(c);
	for (int r = FFJ_RESTART_MAX; r > 1; r--)
		if (mw % r == 0)
			return r;
	return 1;
}

// All state lives on the heap: only the pointer is a local, and it does not
// change after setjmp, so it is still valid after a longjmp.
typedef struct {
	struct jpeg_compress_struct c;
	ffj_err err;
	ffj_dest dest;
} ffe_state;

int ffj_encode(const unsigned char *pix, int w, int h, int ncomp, int in_cs,
               int jpeg_cs, int quality, int hs, int vs, int progressive, int optimize, int restart,
               unsigned char **out, size_t *outlen, char *msg, size_t msglen) {
	ffe_state *s = calloc(1, sizeof *s);
	if (!s)
		return FFJ_ERR_NOMEM;
	s->dest.cap = (size_t)w * h * ncomp / 4 + 4096;
	s->dest.buf = malloc(s->dest.cap);
	if (!s->dest.buf) {
		free(s);
		return FFJ_ERR_NOMEM;
	}
	ffj_init_err(&s->err);
	s->c.err = &s->err.pub;
	if (setjmp(s->err.jb)) {
		snprintf(msg, msglen, "%s", s->err.msg);
		jpeg_destroy_compress(&s->c);
		free(s->dest.buf);
		free(s);
		return FFJ_ERR_LIB;
	}
	jpeg_create_compress(&s->c);
	ffj_set_dest(&s->c, &s->dest);

	s->c.image_width = (JDIMENSION)w;
	s->c.image_height = (JDIMENSION)h;
	s->c.input_components = ncomp;
	s->c.in_color_space = (J_COLOR_SPACE)in_cs;
	jpeg_set_defaults(&s->c);
	if (jpeg_cs >= 0)
		jpeg_set_colorspace(&s->c, (J_COLOR_SPACE)jpeg_cs);
	jpeg_set_quality(&s->c, quality, TRUE);
	s->c.dct_method = JDCT_ISLOW;
	// Luma (and K) get hs×vs samples per chroma sample: 2x2 is 4:2:0.
	for (int i = 0; i < s->c.num_components; i++) {
		int full = ncomp > 1 && (i == 0 || i == 3);
		s->c.comp_info[i].h_samp_factor = full ? hs : 1;
		s->c.comp_info[i].v_samp_factor = full ? vs : 1;
	}
	s->c.optimize_coding = optimize ? TRUE : FALSE;
	if (progressive)
		jpeg_simple_progression(&s->c);
	else
		s->c.restart_interval = (unsigned)(restart == 0 ? ffj_auto_restart(&s->c) : restart > 0 ? restart : 0);

	jpeg_start_compress(&s->c, TRUE);
	size_t stride = (size_t)w * ncomp;
	while (s->c.next_scanline < s->c.image_height) {
		JSAMPROW rows[16];
		int n = 0;
		for (; n < 16 && s->c.next_scanline + n < s->c.image_height; n++)
			rows[n] = (JSAMPROW)(pix + (size_t)(s->c.next_scanline + n) * stride);
		jpeg_write_scanlines(&s->c, rows, (JDIMENSION)n);
	}
	jpeg_finish_compress(&s->c);
	*out = s->dest.buf;
	*outlen = s->dest.cap - s->dest.pub.free_in_buffer;
	jpeg_destroy_compress(&s->c);
	free(s);
	return FFJ_OK;
}
