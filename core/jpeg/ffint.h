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

struct ffj_dec {
	struct jpeg_decompress_struct cinfo;
	ffj_err err;
};

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

#endif
