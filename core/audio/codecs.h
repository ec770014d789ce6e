// C side of package audio: libFLAC (decode with seeking, encode),
// libopusfile and minimp3 (decode with seeking), all from memory. Every call works on
// the caller's buffers and keeps nothing after it returns.
#ifndef FFCV_AUDIO_CODECS_H
#define FFCV_AUDIO_CODECS_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
	unsigned rate, channels, bits;
	uint64_t total; // frames the header gives; 0 when it gives none
} ffa_info;

// Errors: a message copied into err (errlen bytes, NUL-terminated).
enum { FFA_OK = 0, FFA_ERR = -1 };

// Reads the header of a FLAC stream.
int ffa_flac_info(const uint8_t *data, size_t len, ffa_info *info, char *err, size_t errlen);
// Decodes frames [start, start+n) into out as floats (channel c's frames
// at out[c*stride ...]), seeking to start; *got is the frames written.
int ffa_flac_window(const uint8_t *data, size_t len, uint64_t start, uint64_t n, float *out, size_t stride,
                    uint64_t *got, char *err, size_t errlen);
// Decodes the whole stream into out (n frames at most, integer samples
// planar with stride n), checking the stream's MD5 when it has one; *got
// is the frames decoded.
int ffa_flac_all(const uint8_t *data, size_t len, int32_t *out, uint64_t n, uint64_t *got,
                 char *err, size_t errlen);
// Encodes n frames of planar integer samples (stride n) as FLAC at
// compression level 5 with a seek table; *out (free() it) holds *outlen bytes.
int ffa_flac_encode(const int32_t *pcm, uint64_t n, unsigned channels, unsigned bits, unsigned rate,
                    uint8_t **out, size_t *outlen, char *err, size_t errlen);

int ffa_opus_info(const uint8_t *data, size_t len, ffa_info *info, char *err, size_t errlen);
int ffa_opus_window(const uint8_t *data, size_t len, uint64_t start, uint64_t n, float *out, size_t stride,
                    uint64_t *got, char *err, size_t errlen);
int ffa_mp3_info(const uint8_t *data, size_t len, ffa_info *info, char *err, size_t errlen);
int ffa_mp3_window(const uint8_t *data, size_t len, uint64_t start, uint64_t n, float *out, size_t stride,
                   uint64_t *got, char *err, size_t errlen);
#endif
