// Internal to package jpeg's C files: what the region cutter (ffregion.c),
// the Huffman decoder (ffhuff.c) and the splice (ffsplice.c) share about a
// scan and its bytes. It depends on no other file of the package, so none
// of those three calls another through it. Include after <stdio.h> and
// <jpeglib.h>.
#ifndef FFSCAN_H
#define FFSCAN_H

#include <stddef.h>

// ffj_mcu_grid gives the MCU size in full-resolution pixels (fw×fh) of the
// scan whose header c has read, and the MCUs across and down (mw×mh): one
// block per MCU for a scan of one component, each component's h×v blocks
// otherwise. (ffj_mcus_per_row is the compressor's count.)
void ffj_mcu_grid(j_decompress_ptr c, int *fw, int *fh, long *mw, long *mh);

// ffj_reserve grows a buffer of *cap elements of size sz to at least n
// elements (at least 64); 0 when out of memory.
int ffj_reserve(void **buf, size_t *cap, size_t n, size_t sz);

// ffj_next_marker finds the next marker in entropy-coded data[*p:len),
// past stuffed 0xFF 0x00 bytes: it returns the offset of its first 0xFF
// (fill bytes included), sets *code to the marker's code and *p past it;
// *code 0 (and len returned) when there is none.
size_t ffj_next_marker(const unsigned char *data, size_t len, size_t *p, int *code);

#endif
