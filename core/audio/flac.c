//go:build !ffcv_nocodecs

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <FLAC/stream_decoder.h>
#include <FLAC/stream_encoder.h>
#include <FLAC/metadata.h>
#include "codecs.h"

// A memory stream, and where decoded frames go: a float window (fout) or
// whole integer planes (iout), frames [start, start+n).
typedef struct {
	const uint8_t *data;
	size_t len, pos;
	uint64_t start, n, got;
	float *fout;
	int32_t *iout;
	size_t stride;
	ffa_info info;
	int have_info;
	int error; // a FLAC__StreamDecoderErrorStatus + 1; 0 none
	int overflow;
} ffa_flac_src;

static FLAC__StreamDecoderReadStatus rd(const FLAC__StreamDecoder *d, FLAC__byte buf[], size_t *n, void *p) {
	ffa_flac_src *s = p;
	(void)d;
	size_t left = s->len - s->pos;
	if (left == 0) {
		*n = 0;
		return FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM;
	}
	if (*n > left) *n = left;
	memcpy(buf, s->data + s->pos, *n);
	s->pos += *n;
	return FLAC__STREAM_DECODER_READ_STATUS_CONTINUE;
}

static FLAC__StreamDecoderSeekStatus sk(const FLAC__StreamDecoder *d, FLAC__uint64 off, void *p) {
	ffa_flac_src *s = p;
	(void)d;
	if (off > s->len) return FLAC__STREAM_DECODER_SEEK_STATUS_ERROR;
	s->pos = (size_t)off;
	return FLAC__STREAM_DECODER_SEEK_STATUS_OK;
}

static FLAC__StreamDecoderTellStatus tl(const FLAC__StreamDecoder *d, FLAC__uint64 *off, void *p) {
	(void)d;
	*off = ((ffa_flac_src *)p)->pos;
	return FLAC__STREAM_DECODER_TELL_STATUS_OK;
}

static FLAC__StreamDecoderLengthStatus ln(const FLAC__StreamDecoder *d, FLAC__uint64 *len, void *p) {
	(void)d;
	*len = ((ffa_flac_src *)p)->len;
	return FLAC__STREAM_DECODER_LENGTH_STATUS_OK;
}

static FLAC__bool eof(const FLAC__StreamDecoder *d, void *p) {
	ffa_flac_src *s = p;
	(void)d;
	return s->pos >= s->len;
}

static FLAC__StreamDecoderWriteStatus wr(const FLAC__StreamDecoder *d, const FLAC__Frame *f,
                                         const FLAC__int32 *const buf[], void *p) {
	ffa_flac_src *s = p;
	(void)d;
	if (!s->have_info || f->header.channels != s->info.channels || f->header.bits_per_sample != s->info.bits) {
		s->error = 1000; // a frame unlike the stream's header
		return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT;
	}
	uint64_t first = f->header.number.sample_number;
	unsigned bs = f->header.blocksize;
	uint64_t lo = first > s->start ? first : s->start;
	uint64_t hi = first + bs < s->start + s->n ? first + bs : s->start + s->n;
	if (s->iout && first + bs > s->start + s->n) s->overflow = 1;
	if (hi > lo) {
		for (unsigned c = 0; c < s->info.channels; c++) {
			const FLAC__int32 *src = buf[c] + (lo - first);
			if (s->fout) {
				float *dst = s->fout + c * s->stride + (lo - s->start);
				// Integer samples over 2^(bits-1): exact for bits <= 24,
				// as libsndfile and FFmpeg scale them.
				float scale = 1.0f / (float)(1u << (s->info.bits - 1));
				for (uint64_t i = 0; i < hi - lo; i++) dst[i] = (float)src[i] * scale;
			} else {
				memcpy(s->iout + c * s->stride + (lo - s->start), src, (hi - lo) * sizeof(int32_t));
			}
		}
		if (hi > s->start + s->got) s->got = hi - s->start;
	}
	return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE;
}

static void md(const FLAC__StreamDecoder *d, const FLAC__StreamMetadata *m, void *p) {
	ffa_flac_src *s = p;
	(void)d;
	if (m->type == FLAC__METADATA_TYPE_STREAMINFO) {
		s->info.rate = m->data.stream_info.sample_rate;
		s->info.channels = m->data.stream_info.channels;
		s->info.bits = m->data.stream_info.bits_per_sample;
		s->info.total = m->data.stream_info.total_samples;
		s->have_info = 1;
	}
}

static void er(const FLAC__StreamDecoder *d, FLAC__StreamDecoderErrorStatus st, void *p) {
	ffa_flac_src *s = p;
	(void)d;
	if (!s->error) s->error = (int)st + 1;
}

static int fail(char *err, size_t errlen, const char *msg) {
	snprintf(err, errlen, "%s", msg);
	return FFA_ERR;
}

static int stream_error(ffa_flac_src *s, char *err, size_t errlen) {
	if (s->error == 1000) return fail(err, errlen, "a frame's channels or sample size differ from the stream's header");
	snprintf(err, errlen, "corrupt FLAC stream (%s)", FLAC__StreamDecoderErrorStatusString[s->error - 1]);
	return FFA_ERR;
}

// open starts a decoder on s and reads the metadata.
static FLAC__StreamDecoder *open_dec(ffa_flac_src *s, int md5, char *err, size_t errlen) {
	FLAC__StreamDecoder *d = FLAC__stream_decoder_new();
	if (!d) {
		fail(err, errlen, "out of memory");
		return NULL;
	}
	FLAC__stream_decoder_set_md5_checking(d, md5);
	if (FLAC__stream_decoder_init_stream(d, rd, sk, tl, ln, eof, wr, md, er, s) != FLAC__STREAM_DECODER_INIT_STATUS_OK) {
		FLAC__stream_decoder_delete(d);
		fail(err, errlen, "libFLAC decoder did not start");
		return NULL;
	}
	if (!FLAC__stream_decoder_process_until_end_of_metadata(d) || s->error || !s->have_info) {
		if (s->error) stream_error(s, err, errlen);
		else fail(err, errlen, "not a FLAC stream (no STREAMINFO)");
		FLAC__stream_decoder_delete(d);
		return NULL;
	}
	if (s->info.bits < 4 || s->info.bits > 32 || s->info.channels < 1) {
		fail(err, errlen, "FLAC STREAMINFO out of range");
		FLAC__stream_decoder_delete(d);
		return NULL;
	}
	return d;
}

int ffa_flac_info(const uint8_t *data, size_t len, ffa_info *info, char *err, size_t errlen) {
	ffa_flac_src s = {.data = data, .len = len};
	FLAC__StreamDecoder *d = open_dec(&s, 0, err, errlen);
	if (!d) return FFA_ERR;
	*info = s.info;
	FLAC__stream_decoder_delete(d);
	return FFA_OK;
}

int ffa_flac_window(const uint8_t *data, size_t len, uint64_t start, uint64_t n, float *out, size_t stride,
                    uint64_t *got, char *err, size_t errlen) {
	ffa_flac_src s = {.data = data, .len = len, .start = start, .n = n, .fout = out, .stride = stride};
	*got = 0;
	FLAC__StreamDecoder *d = open_dec(&s, 0, err, errlen);
	if (!d) return FFA_ERR;
	int rc = FFA_OK;
	if (s.info.bits > 24) {
		rc = fail(err, errlen, "FLAC of more than 24 bits per sample");
		goto out;
	}
	if (start > 0 && !FLAC__stream_decoder_seek_absolute(d, start)) {
		if (s.error) rc = stream_error(&s, err, errlen);
		else snprintf(err, errlen, "cannot seek to frame %llu (truncated or corrupt FLAC)", (unsigned long long)start), rc = FFA_ERR;
		goto out;
	}
	while (s.got < n) {
		FLAC__StreamDecoderState st = FLAC__stream_decoder_get_state(d);
		if (st == FLAC__STREAM_DECODER_END_OF_STREAM || st == FLAC__STREAM_DECODER_ABORTED) break;
		if (!FLAC__stream_decoder_process_single(d)) break;
		if (s.error) break;
	}
	if (s.error) rc = stream_error(&s, err, errlen);
out:
	*got = s.got;
	FLAC__stream_decoder_delete(d);
	return rc;
}

int ffa_flac_all(const uint8_t *data, size_t len, int32_t *out, uint64_t n, uint64_t *got, char *err, size_t errlen) {
	ffa_flac_src s = {.data = data, .len = len, .start = 0, .n = n, .iout = out, .stride = n};
	*got = 0;
	FLAC__StreamDecoder *d = open_dec(&s, 1, err, errlen);
	if (!d) return FFA_ERR;
	int rc = FFA_OK;
	if (!FLAC__stream_decoder_process_until_end_of_stream(d) || s.error) {
		rc = s.error ? stream_error(&s, err, errlen) : fail(err, errlen, "corrupt FLAC stream");
		if (s.error == FLAC__STREAM_DECODER_ERROR_STATUS_LOST_SYNC + 1 && s.got < n)
			snprintf(err, errlen, "truncated FLAC: its STREAMINFO gives %llu frames, %llu decode before the stream breaks off",
			         (unsigned long long)n, (unsigned long long)s.got);
	} else if (s.overflow) {
		rc = fail(err, errlen, "the stream holds more frames than its header says");
	} else if (!FLAC__stream_decoder_finish(d)) {
		rc = fail(err, errlen, "corrupt FLAC stream: the decoded audio fails the MD5 sum of its header");
	}
	*got = s.got;
	FLAC__stream_decoder_delete(d);
	return rc;
}

// ---- encoding -------------------------------------------------------------

typedef struct {
	uint8_t *buf;
	size_t len, cap, pos;
	int oom;
} ffa_sink;

static FLAC__StreamEncoderWriteStatus ewr(const FLAC__StreamEncoder *e, const FLAC__byte b[], size_t n,
                                          uint32_t samples, uint32_t frame, void *p) {
	ffa_sink *s = p;
	(void)e, (void)samples, (void)frame;
	if (s->pos + n > s->cap) {
		size_t c = s->cap ? s->cap : 1 << 16;
		while (c < s->pos + n) c *= 2;
		uint8_t *nb = realloc(s->buf, c);
		if (!nb) {
			s->oom = 1;
			return FLAC__STREAM_ENCODER_WRITE_STATUS_FATAL_ERROR;
		}
		s->buf = nb, s->cap = c;
	}
	memcpy(s->buf + s->pos, b, n);
	s->pos += n;
	if (s->pos > s->len) s->len = s->pos;
	return FLAC__STREAM_ENCODER_WRITE_STATUS_OK;
}

static FLAC__StreamEncoderSeekStatus esk(const FLAC__StreamEncoder *e, FLAC__uint64 off, void *p) {
	ffa_sink *s = p;
	(void)e;
	if (off > s->len) return FLAC__STREAM_ENCODER_SEEK_STATUS_ERROR;
	s->pos = (size_t)off;
	return FLAC__STREAM_ENCODER_SEEK_STATUS_OK;
}

static FLAC__StreamEncoderTellStatus etl(const FLAC__StreamEncoder *e, FLAC__uint64 *off, void *p) {
	(void)e;
	*off = ((ffa_sink *)p)->pos;
	return FLAC__STREAM_ENCODER_TELL_STATUS_OK;
}

int ffa_flac_encode(const int32_t *pcm, uint64_t n, unsigned channels, unsigned bits, unsigned rate,
                    uint8_t **out, size_t *outlen, char *err, size_t errlen) {
	*out = NULL, *outlen = 0;
	FLAC__StreamEncoder *e = FLAC__stream_encoder_new();
	FLAC__StreamMetadata *table = FLAC__metadata_object_new(FLAC__METADATA_TYPE_SEEKTABLE);
	ffa_sink s = {0};
	int rc = FFA_OK;
	if (!e || !table) {
		rc = fail(err, errlen, "out of memory");
		goto out;
	}
	// A seek point a second: a window's decode starts at most a second early.
	if (!FLAC__metadata_object_seektable_template_append_spaced_points_by_samples(table, rate, n) ||
	    !FLAC__metadata_object_seektable_template_sort(table, true)) {
		rc = fail(err, errlen, "out of memory");
		goto out;
	}
	FLAC__stream_encoder_set_channels(e, channels);
	FLAC__stream_encoder_set_bits_per_sample(e, bits);
	FLAC__stream_encoder_set_sample_rate(e, rate);
	FLAC__stream_encoder_set_compression_level(e, 5);
	FLAC__stream_encoder_set_total_samples_estimate(e, n);
	FLAC__stream_encoder_set_metadata(e, &table, 1);
	FLAC__StreamEncoderInitStatus is = FLAC__stream_encoder_init_stream(e, ewr, esk, etl, NULL, &s);
	if (is != FLAC__STREAM_ENCODER_INIT_STATUS_OK) {
		snprintf(err, errlen, "libFLAC encoder: %s (%u channels, %u bits, %u Hz)",
		         FLAC__StreamEncoderInitStatusString[is], channels, bits, rate);
		rc = FFA_ERR;
		goto out;
	}
	enum { CHUNK = 4096 };
	const FLAC__int32 *planes[8];
	for (uint64_t at = 0; at < n; at += CHUNK) {
		unsigned k = n - at < CHUNK ? (unsigned)(n - at) : CHUNK;
		for (unsigned c = 0; c < channels; c++) planes[c] = pcm + c * n + at;
		if (!FLAC__stream_encoder_process(e, planes, k)) {
			snprintf(err, errlen, "libFLAC encoder: %s",
			         s.oom ? "out of memory" : FLAC__StreamEncoderStateString[FLAC__stream_encoder_get_state(e)]);
			rc = FFA_ERR;
			goto out;
		}
	}
	if (!FLAC__stream_encoder_finish(e)) {
		snprintf(err, errlen, "libFLAC encoder: %s", FLAC__StreamEncoderStateString[FLAC__stream_encoder_get_state(e)]);
		rc = FFA_ERR;
		goto out;
	}
	*out = s.buf, *outlen = s.len;
	s.buf = NULL;
out:
	if (e) FLAC__stream_encoder_delete(e);
	if (table) FLAC__metadata_object_delete(table);
	free(s.buf);
	return rc;
}
