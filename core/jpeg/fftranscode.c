#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#include "ffjpeg.h"
#include "ffint.h"

// ffj_is_420 reports whether c (after jpeg_read_header) is what the
// writer's own encoder produces: 8-bit YCbCr with 2x2 luma per chroma sample.
static int ffj_is_420(j_decompress_ptr c) {
	return c->jpeg_color_space == JCS_YCbCr && c->num_components == 3 && c->data_precision == 8 &&
	       c->comp_info[0].h_samp_factor == 2 && c->comp_info[0].v_samp_factor == 2 &&
	       c->comp_info[1].h_samp_factor == 1 && c->comp_info[1].v_samp_factor == 1 &&
	       c->comp_info[2].h_samp_factor == 1 && c->comp_info[2].v_samp_factor == 1;
}

int ffj_verify(ffj_dec *d, const unsigned char *data, unsigned long len) {
	j_decompress_ptr c = &d->cinfo;
	d->err.msg[0] = 0;
	if (setjmp(d->err.jb))
		return ffj_fail(c, FFJ_ERR_LIB);
	jpeg_mem_src(c, data, len);
	jpeg_read_header(c, TRUE);
	if (ffj_scan_clean(d, data, len, len - c->src->bytes_in_buffer) < 0) {
		snprintf(d->err.msg, sizeof d->err.msg, "Corrupt JPEG data: a restart interval does not end at its marker");
		return ffj_fail(c, FFJ_ERR_LIB);
	}
	jpeg_read_coefficients(c);
	jpeg_finish_decompress(c); // reads on to EOI, as a full decode does
	return ffj_fail(c, FFJ_OK); // drops the source pointer
}

// Transcoding state on the heap, so that it survives a longjmp intact.
typedef struct {
	struct jpeg_compress_struct c;
	ffj_dest dest;
	int created;
} fft_state;

static void fft_free(fft_state *s) {
	if (s->created)
		jpeg_destroy_compress(&s->c);
	free(s->dest.buf);
	free(s);
}

// FFJ_VECTORIZED compiles a function at -O3 (cgo's default is -O2, which
// leaves loops scalar), on x86-64 twice: for AVX2 and for the SSE2 floor,
// the loader picking one for the CPU.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FFJ_VECTORIZED __attribute__((optimize("O3"), target_clones("avx2", "default")))
#elif defined(__GNUC__) && !defined(__clang__)
#define FFJ_VECTORIZED __attribute__((optimize("O3")))
#else
#define FFJ_VECTORIZED
#endif

// ffj_requantize rewrites n blocks of coefficients quantized by from as
// quantized by to: the nearest multiple of to[k], halves away from zero
// (libjpeg's rounding when it quantizes a DCT output), that is
// q = floor(v / to[k]) for v = |coef|·from[k] + to[k]/2, with the sign put
// back. The writer never refines a step: from[k] <= to[k].
//
// With 8-bit steps (always, in baseline files) this runs in float32 without
// a branch, which the compiler vectorizes: a q95 photo's transcode went
// from 1.37 to 1.03 ms with SSE2 and to about 0.95 with AVX2, against a
// branchy integer loop. It stays exact: v < 2^24 and to[k] are exact
// floats, and q < 2^15 (as from <= to). The correctly rounded quotient is
// within 2^-9 of v/to[k], whose fraction (when not 0) is at least 1/255 from
// either integer, so truncating it gives q. Other steps take the integer
// division.
FFJ_VECTORIZED void ffj_requantize(short *coef, long n, const unsigned short *from, const unsigned short *to) {
	float fromf[DCTSIZE2], halff[DCTSIZE2], tof[DCTSIZE2];
	int fast = 1;
	for (int k = 0; k < DCTSIZE2; k++) {
		fromf[k] = from[k];
		halff[k] = to[k] / 2;
		tof[k] = to[k];
		fast &= from[k] <= to[k] && to[k] <= 255;
	}
	for (long i = 0; i < n; i++) {
		short *b = coef + i * DCTSIZE2;
		if (fast) {
			for (int k = 0; k < DCTSIZE2; k++) {
				int c = b[k], sign = c >> 31; // 0 or -1: x ^ sign - sign is x or -x
				int q = (int)(((float)((c ^ sign) - sign) * fromf[k] + halff[k]) / tof[k]);
				b[k] = (short)((q ^ sign) - sign);
			}
			continue;
		}
		for (int k = 0; k < DCTSIZE2; k++) {
			long c = b[k];
			long q = ((c < 0 ? -c : c) * from[k] + to[k] / 2) / to[k];
			b[k] = (short)(c < 0 ? -q : q);
		}
	}
}

// ffj_coefs_fit reports whether n blocks of coefficients fit baseline
// Huffman coding with 8-bit samples: DC in [-1024, 1023] (so that a DC
// difference takes at most 11 bits) and AC within ±1023 (10 bits). Real
// 8-bit JPEGs always fit; a damaged one whose Huffman tables code larger
// values can decode, and libjpeg-turbo's SIMD Huffman encoder would then
// write codes for sizes the standard tables lack, silently corrupt.
FFJ_VECTORIZED int ffj_coefs_fit(const short *coef, long n) {
	// One flat pass for "all within ±1023", which vectorizes; only a block
	// set outside it (a DC of -1024 is fine) is looked at value by value.
	int wide = 0;
	for (long i = 0; i < n * DCTSIZE2; i++)
		wide |= (unsigned short)(coef[i] + 1023) > 2046;
	if (!wide)
		return 1;
	for (long i = 0; i < n; i++) {
		const short *b = coef + i * DCTSIZE2;
		if (b[0] < -1024 || b[0] > 1023)
			return 0;
		for (int k = 1; k < DCTSIZE2; k++)
			if (b[k] < -1023 || b[k] > 1023)
				return 0;
	}
	return 1;
}

// fft_fits is ffj_coefs_fit over every component's coefficients.
static int fft_fits(j_decompress_ptr in, jvirt_barray_ptr *coefs) {
	for (int ci = 0; ci < in->num_components; ci++) {
		jpeg_component_info *comp = &in->comp_info[ci];
		for (JDIMENSION row = 0; row < comp->height_in_blocks; row++) {
			JBLOCKARRAY blocks = (*in->mem->access_virt_barray)((j_common_ptr)in, coefs[ci], row, 1, FALSE);
			if (!ffj_coefs_fit(blocks[0][0], comp->width_in_blocks))
				return 0;
		}
	}
	return 1;
}

// fft_requantize requantizes component ci's coefficients from one table
// to the other (see ffj_requantize).
static void fft_requantize(j_decompress_ptr in, jvirt_barray_ptr arr, int ci,
                           const UINT16 *from, const UINT16 *to) {
	jpeg_component_info *comp = &in->comp_info[ci];
	if (memcmp(from, to, DCTSIZE2 * sizeof *from) == 0)
		return;
	for (JDIMENSION row = 0; row < comp->height_in_blocks; row++) {
		JBLOCKARRAY blocks = (*in->mem->access_virt_barray)((j_common_ptr)in, arr, row, 1, TRUE);
		ffj_requantize(blocks[0][0], comp->width_in_blocks, from, to);
	}
}

// fft_copy_header copies the header of the source JPEG data[0:end) into
// dest, up to and including its SOS segment, without its metadata segments:
// APP1-APP13, APP15 (EXIF, ICC, XMP...) and COM. JFIF (APP0) and Adobe
// (APP14) stay: they say how the components map to colours. The segments
// pre[0:npre) go before SOS. It returns where the scan starts in data, or 0
// (dest left empty) on a layout it does not expect.
static size_t fft_copy_header(const unsigned char *data, size_t end, ffj_dest *dest, const unsigned char *pre,
                              size_t npre) {
	unsigned char *out = dest->buf;
	size_t n = 0, i = 2;
	if (end < 4 || dest->cap < end + npre)
		return 0;
	out[n++] = 0xFF;
	out[n++] = 0xD8;
	for (;;) {
		while (i < end && data[i] == 0xFF && i + 1 < end && data[i + 1] == 0xFF)
			i++; // fill bytes before a marker
		if (i + 4 > end || data[i] != 0xFF)
			return 0;
		int marker = data[i + 1];
		size_t seglen = 2 + ((size_t)data[i + 2] << 8 | data[i + 3]);
		if (seglen < 4 || i + seglen > end)
			return 0;
		if (marker == 0xDA) {
			memcpy(out + n, pre, npre);
			n += npre;
		}
		int drop = (marker >= 0xE1 && marker <= 0xED) || marker == 0xEF || marker == 0xFE;
		if (!drop) {
			memcpy(out + n, data + i, seglen);
			n += seglen;
		}
		i += seglen;
		if (marker == 0xDA)
			break;
	}
	dest->pub.next_output_byte = out + n;
	dest->pub.free_in_buffer = dest->cap - n;
	return i;
}

// fft_dest_empty leaves dest holding nothing, after a copy given up.
static int fft_dest_empty(ffj_dest *dest) {
	dest->pub.next_output_byte = dest->buf;
	dest->pub.free_in_buffer = dest->cap;
	return 0;
}

// fft_keep_scan copies the source JPEG data[0:end) (end: just past its EOI)
// into dest with its header as fft_copy_header leaves it. Returns 0,
// leaving dest empty, on a layout it does not expect or a scan with restart
// markers the loader's decoder would refuse (ffj_scan_clean); the caller
// then re-encodes.
static int fft_keep_scan(ffj_dec *d, const unsigned char *data, size_t end, ffj_dest *dest) {
	size_t scan = fft_copy_header(data, end, dest, NULL, 0);
	if (!scan)
		return 0;
	if (ffj_scan_clean(d, data, end, scan) < 0)
		return fft_dest_empty(dest);
	memcpy(dest->pub.next_output_byte, data + scan, end - scan);
	dest->pub.next_output_byte += end - scan;
	dest->pub.free_in_buffer -= end - scan;
	return 1;
}

// fft_splice writes the source JPEG data[0:len) with restart markers every
// ri MCUs into dest, its scan copied and not re-encoded (ffh_add_restarts).
// Where the source's DC tables lack codes the splice may need (tables made
// for the image), every DC difference is coded again with the standard DC
// table, which the header then defines. Returns 0, leaving dest empty, where
// that does not apply.
static int fft_splice(ffj_dec *d, const unsigned char *data, size_t len, long ri, ffj_dest *dest) {
	j_decompress_ptr in = &d->cinfo;
	size_t scan = len - in->src->bytes_in_buffer; // libjpeg has read up to the end of SOS
	unsigned char pre[6 + NUM_HUFF_TBLS * FFH_STD_DC_SEGMENT] = {0xFF, 0xDD, 0, 4, (unsigned char)(ri >> 8),
	                                                             (unsigned char)ri};
	size_t npre = 6;
	if (!ffh_tables(d->huff, in)) // checks the table numbers ffh_dc_complete and the loop use
		return 0;
	int std_dc = !ffh_dc_complete(in), done = 0;
	for (int i = 0; std_dc && i < in->comps_in_scan; i++) {
		int no = in->cur_comp_info[i]->dc_tbl_no;
		if (!(done >> no & 1))
			npre += ffh_std_dc_segment(pre + npre, no);
		done |= 1 << no;
	}
	if (fft_copy_header(data, scan, dest, pre, npre) != scan)
		return fft_dest_empty(dest); // a header that does not end where libjpeg's did
	size_t n = dest->cap - dest->pub.free_in_buffer;
	if (!ffh_add_restarts(d->huff, in, data, len, scan, ri, std_dc, &dest->buf, &n, &dest->cap) ||
	    dest->cap - n < 2)
		return fft_dest_empty(dest);
	dest->buf[n++] = 0xFF;
	dest->buf[n++] = 0xD9;
	dest->pub.next_output_byte = dest->buf + n;
	dest->pub.free_in_buffer = dest->cap - n;
	return 1;
}

int ffj_transcode(ffj_dec *d, const unsigned char *data, unsigned long len, int quality, int keep_scan,
                  unsigned char **out, size_t *outlen) {
	j_decompress_ptr in = &d->cinfo;
	fft_state *volatile s = calloc(1, sizeof *s); // volatile: read after longjmp
	if (!s)
		return FFJ_ERR_NOMEM;
	d->err.msg[0] = 0;
	d->spliced = 0;
	if (setjmp(d->err.jb)) {
		fft_free(s);
		return ffj_fail(in, FFJ_ERR_LIB);
	}
	jpeg_mem_src(in, data, len);
	jpeg_read_header(in, TRUE);
	if (!ffj_is_420(in)) {
		free(s);
		return ffj_fail(in, FFJ_ERR_FORMAT);
	}
	// The compressor shares the decoder's error manager, and so its setjmp.
	s->c.err = &d->err.pub;
	jpeg_create_compress(&s->c);
	s->created = 1;
	s->dest.cap = len + 4096;
	s->dest.buf = malloc(s->dest.cap);
	if (!s->dest.buf)
		ERREXIT1(in, JERR_OUT_OF_MEMORY, 11);
	ffj_set_dest(&s->c, &s->dest);
	jpeg_copy_critical_parameters(in, &s->c);

	// The tables the pixel encoder would use at this quality (luma, chroma)...
	jpeg_set_quality(&s->c, quality, TRUE);
	UINT16 target[2][DCTSIZE2];
	for (int t = 0; t < 2; t++)
		memcpy(target[t], s->c.quant_tbl_ptrs[t]->quantval, sizeof target[t]);
	// ...coarsened to the source's step wherever that is coarser: quantizing
	// finer than the source only spends bits on its rounding error. Each
	// component gets its own table; Cb and Cr share one when equal.
	UINT16 tables[3][DCTSIZE2];
	int same = 1;
	for (int ci = 0; ci < 3; ci++) {
		int no = in->comp_info[ci].quant_tbl_no; // the header's (libjpeg latches them later)
		if (no < 0 || no >= NUM_QUANT_TBLS || !in->quant_tbl_ptrs[no])
			ERREXIT1(in, JERR_NO_QUANT_TABLE, no);
		const UINT16 *src = in->quant_tbl_ptrs[no]->quantval;
		for (int k = 0; k < DCTSIZE2; k++)
			tables[ci][k] = src[k] > target[ci > 0][k] ? src[k] : target[ci > 0][k];
		same &= memcmp(tables[ci], src, sizeof tables[ci]) == 0;
	}
	s->c.restart_interval = (unsigned)ffj_auto_restart(&s->c);
	// No step changes: the coefficients would come out as they went in, so
	// the source's own scan is kept. Without restart markers it gets them
	// spliced in, which costs a Huffman decode but no encode (and the
	// source's own Huffman tables stay).
	long ri = (long)in->restart_interval;
	if (same && ri == 0 && !keep_scan && fft_splice(d, data, len, (long)s->c.restart_interval, &s->dest)) {
		ffj_fail(in, FFJ_OK); // drops the source pointer
		d->spliced = 1;
		goto out;
	}
	jvirt_barray_ptr *coefs = jpeg_read_coefficients(in);
	// Reading the coefficients stopped at EOI: what is left is past it.
	size_t end = len - in->src->bytes_in_buffer;
	// Otherwise a scan is kept as it is (one baseline-style Huffman scan, as
	// the re-encode would write) if its restart markers line up with MCU
	// rows as the re-encode's would (or keep_scan).
	int lined_up = keep_scan || (ri > 0 && ffj_mcus_per_row(&s->c) % ri == 0);
	if (same && lined_up && !in->progressive_mode && !in->arith_code && in->input_scan_number == 1 &&
	    fft_keep_scan(d, data, end, &s->dest))
		goto done;
	for (int ci = 0; ci < 3; ci++) {
		int slot = ci;
		if (ci == 2 && memcmp(tables[2], tables[1], sizeof tables[2]) == 0)
			slot = 1;
		unsigned int basic[DCTSIZE2];
		for (int k = 0; k < DCTSIZE2; k++)
			basic[k] = tables[ci][k];
		if (slot == ci)
			jpeg_add_quant_table(&s->c, slot, basic, 100, FALSE);
		s->c.comp_info[ci].quant_tbl_no = slot;
		fft_requantize(in, coefs[ci], ci, in->comp_info[ci].quant_table->quantval, tables[ci]);
	}
	for (int t = 3; t < NUM_QUANT_TBLS; t++)
		s->c.quant_tbl_ptrs[t] = NULL; // jpeg_copy_critical_parameters may have copied more
	if (s->c.comp_info[2].quant_tbl_no == 1)
		s->c.quant_tbl_ptrs[2] = NULL; // Cr shares Cb's table

	if (!fft_fits(in, coefs)) { // left to a pixel re-encode, which is always valid
		fft_free(s);
		return ffj_fail(in, FFJ_ERR_FORMAT);
	}
	jpeg_write_coefficients(&s->c, coefs);
	jpeg_finish_compress(&s->c);
done:
	jpeg_finish_decompress(in); // reads on to EOI, as a full decode does
	ffj_fail(in, FFJ_OK);       // drops the source pointer
out:
	*out = s->dest.buf;
	*outlen = s->dest.cap - s->dest.pub.free_in_buffer;
	s->dest.buf = NULL;
	fft_free(s);
	return FFJ_OK;
}
