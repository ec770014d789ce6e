//go:build !ffcv_nocodecs

// MP3 through minimp3 (CC0, vendored in minimp3/): sample-exact seeking
// from an index of frame headers, gapless (the LAME/Xing tag's delay and
// padding trimmed as FFmpeg trims them). Our one change to minimp3.h zeroes
// a frame's scratch before it is decoded (marked "ffcv-go"). Go's build
// cache does not see headers outside the package's folder: a change to
// minimp3/ needs a change here (or go clean -cache) to be compiled.
#include <stdio.h>
#include <stdlib.h>
#define MINIMP3_IMPLEMENTATION
#define MINIMP3_FLOAT_OUTPUT
#define MINIMP3_NO_STDIO
#include "minimp3/minimp3_ex.h"
#include "codecs.h"

static mp3dec_ex_t *open_mp3(const uint8_t *data, size_t len, ffa_info *info, char *err, size_t errlen) {
	mp3dec_ex_t *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	int rc = mp3dec_ex_open_buf(d, data, len, MP3D_SEEK_TO_SAMPLE);
	if (rc != 0 || d->info.channels < 1 || d->info.hz < 1) {
		snprintf(err, errlen, "MP3: %s", rc == MP3D_E_MEMORY ? "out of memory" : "no MPEG audio frame decodes");
		if (rc == 0) mp3dec_ex_close(d);
		free(d);
		return NULL;
	}
	if (d->info.layer != 3) {
		snprintf(err, errlen, "MPEG audio layer %d (only Layer III, MP3, is read)", d->info.layer);
		mp3dec_ex_close(d);
		free(d);
		return NULL;
	}
	info->rate = (unsigned)d->info.hz;
	info->channels = (unsigned)d->info.channels;
	info->bits = 0;
	info->total = d->samples / (uint64_t)d->info.channels;
	return d;
}

int ffa_mp3_info(const uint8_t *data, size_t len, ffa_info *info, char *err, size_t errlen) {
	mp3dec_ex_t *d = open_mp3(data, len, info, err, errlen);
	if (!d) return FFA_ERR;
	mp3dec_ex_close(d);
	free(d);
	return FFA_OK;
}

int ffa_mp3_window(const uint8_t *data, size_t len, uint64_t start, uint64_t n, float *out, size_t stride,
                   uint64_t *got, char *err, size_t errlen) {
	ffa_info info;
	*got = 0;
	mp3dec_ex_t *d = open_mp3(data, len, &info, err, errlen);
	if (!d) return FFA_ERR;
	int rc = FFA_OK;
	unsigned ch = info.channels;
	if (start > 0 && mp3dec_ex_seek(d, start * ch) != 0) {
		snprintf(err, errlen, "MP3: cannot seek to frame %llu", (unsigned long long)start);
		rc = FFA_ERR;
		goto out;
	}
	enum { BUF = 1152 * 4 };
	float buf[BUF * 2]; // 36 KiB: cgo runs C on a thread stack
	uint64_t at = 0;
	while (at < n) {
		uint64_t want = (n - at) * ch < BUF * 2 ? (n - at) * ch : (BUF * 2) / ch * ch;
		size_t k = mp3dec_ex_read(d, buf, (size_t)want);
		if (k < want && d->last_error) {
			snprintf(err, errlen, "MP3: corrupt at frame %llu (decode error %d)", (unsigned long long)(start + at), d->last_error);
			rc = FFA_ERR;
			break;
		}
		k /= ch;
		for (unsigned c = 0; c < ch; c++) {
			float *dst = out + c * stride + at;
			for (size_t i = 0; i < k; i++) dst[i] = buf[i * ch + c];
		}
		at += k;
		if (k * ch < want) break;
	}
	*got = at;
out:
	mp3dec_ex_close(d);
	free(d);
	return rc;
}
