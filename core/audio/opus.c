//go:build !ffcv_nocodecs

#include <stdio.h>
#include <stdlib.h>
#include <opusfile.h>
#include "codecs.h"

static const char *op_reason(int rc) {
	switch (rc) {
	case OP_EREAD: return "read error";
	case OP_EFAULT: return "internal error";
	case OP_EIMPL: return "a feature libopusfile does not implement";
	case OP_EINVAL: return "invalid argument";
	case OP_ENOTFORMAT: return "not an Ogg/Opus stream";
	case OP_EBADHEADER: return "bad Opus header";
	case OP_EVERSION: return "unknown Opus version";
	case OP_EBADPACKET: return "bad packet";
	case OP_EBADLINK: return "bad link (truncated or corrupt)";
	case OP_ENOSEEK: return "unseekable stream";
	case OP_EBADTIMESTAMP: return "bad timestamp (truncated or corrupt)";
	case OP_HOLE: return "a hole in the data (missing or corrupt pages)";
	}
	return "decode error";
}

static OggOpusFile *open_opus(const uint8_t *data, size_t len, ffa_info *info, char *err, size_t errlen) {
	int rc = 0;
	OggOpusFile *f = op_open_memory(data, len, &rc);
	if (!f) {
		snprintf(err, errlen, "Ogg/Opus: %s", op_reason(rc));
		return NULL;
	}
	if (op_link_count(f) != 1) {
		snprintf(err, errlen, "Ogg/Opus: chained streams (%d links) are not supported", op_link_count(f));
		op_free(f);
		return NULL;
	}
	ogg_int64_t total = op_pcm_total(f, -1);
	if (total < 0) {
		snprintf(err, errlen, "Ogg/Opus: %s", op_reason((int)total));
		op_free(f);
		return NULL;
	}
	info->rate = 48000; // Opus decodes at 48 kHz whatever the input rate was
	info->channels = (unsigned)op_channel_count(f, -1);
	info->bits = 0;
	info->total = (uint64_t)total;
	return f;
}

int ffa_opus_info(const uint8_t *data, size_t len, ffa_info *info, char *err, size_t errlen) {
	OggOpusFile *f = open_opus(data, len, info, err, errlen);
	if (!f) return FFA_ERR;
	op_free(f);
	return FFA_OK;
}

int ffa_opus_window(const uint8_t *data, size_t len, uint64_t start, uint64_t n, float *out, size_t stride,
                    uint64_t *got, char *err, size_t errlen) {
	ffa_info info;
	*got = 0;
	OggOpusFile *f = open_opus(data, len, &info, err, errlen);
	if (!f) return FFA_ERR;
	int rc = FFA_OK;
	if (start > 0) {
		int s = op_pcm_seek(f, (ogg_int64_t)start);
		if (s < 0) {
			snprintf(err, errlen, "Ogg/Opus: cannot seek to frame %llu: %s", (unsigned long long)start, op_reason(s));
			op_free(f);
			return FFA_ERR;
		}
	}
	unsigned ch = info.channels;
	enum { BUF = 5760 }; // 120 ms at 48 kHz, the longest Opus packet
	float *buf = malloc(sizeof(float) * BUF * ch);
	if (!buf) {
		op_free(f);
		snprintf(err, errlen, "out of memory");
		return FFA_ERR;
	}
	uint64_t at = 0;
	while (at < n) {
		int k = op_read_float(f, buf, BUF * (int)ch, NULL);
		if (k < 0) {
			snprintf(err, errlen, "Ogg/Opus: corrupt at frame %llu: %s", (unsigned long long)(start + at), op_reason(k));
			rc = FFA_ERR;
			break;
		}
		if (k == 0) break;
		uint64_t take = (uint64_t)k < n - at ? (uint64_t)k : n - at;
		for (unsigned c = 0; c < ch; c++) {
			float *dst = out + c * stride + at;
			for (uint64_t i = 0; i < take; i++) dst[i] = buf[i * ch + c];
		}
		at += take;
	}
	free(buf);
	op_free(f);
	*got = at;
	return rc;
}
