package jpeg

/*
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>
#include "ffjpeg.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Encode compresses width×height RGB pixels (HWC, tightly packed) as a
// baseline JFIF JPEG with 4:2:0 chroma subsampling at the given quality
// (1-100, libjpeg's scale; OpenCV's default is 95).
func Encode(pixels []byte, width, height, quality int) ([]byte, error) {
	return encode(pixels, width, height, quality, encodeOptions{subsample: true})
}

// encodeOptions selects the variants the tests need to produce grayscale,
// CMYK, YCCK, other chroma subsamplings and progressive files.
type encodeOptions struct {
	gray        bool // 1 byte per pixel input, grayscale JPEG
	cmyk        bool // 4 bytes per pixel (Adobe-inverted) input
	ycck        bool // with cmyk: store as YCCK instead of CMYK
	subsample   bool // 2x2 luma (and K) samples per chroma sample: 4:2:0
	hs, vs      int  // other luma sampling factors, e.g. 2x1 for 4:2:2; overrides subsample
	progressive bool
	optimize    bool // Huffman tables made for the image (libjpeg's optimize_coding)
	restart     int  // restart interval in MCUs: 0 the writer's own (ffj_auto_restart), -1 none
}

// maxDimension is libjpeg's JPEG_MAX_DIMENSION.
const maxDimension = 65500

func encode(pixels []byte, width, height, quality int, o encodeOptions) ([]byte, error) {
	ncomp, inCS, jpegCS := 3, C.JCS_RGB, -1
	switch {
	case o.gray:
		ncomp, inCS = 1, C.JCS_GRAYSCALE
	case o.cmyk:
		ncomp, inCS = 4, C.JCS_CMYK
		if o.ycck {
			jpegCS = C.JCS_YCCK
		}
	}
	if width <= 0 || height <= 0 || width > maxDimension || height > maxDimension {
		return nil, fmt.Errorf("jpeg: encode: bad size %dx%d", width, height)
	}
	if quality < 1 || quality > 100 {
		return nil, fmt.Errorf("jpeg: encode: quality %d not in 1..100", quality)
	}
	if need := width * height * ncomp; len(pixels) < need {
		return nil, fmt.Errorf("jpeg: encode: have %d bytes, need %d for %dx%dx%d", len(pixels), need, width, height, ncomp)
	}
	hs, vs := 1, 1
	switch {
	case o.hs > 0 && o.vs > 0:
		hs, vs = o.hs, o.vs
	case o.subsample:
		hs, vs = 2, 2
	}
	var out *C.uchar
	var outLen C.size_t
	var msg [C.JMSG_LENGTH_MAX]C.char
	rc := C.ffj_encode(bytePtr(pixels), C.int(width), C.int(height), C.int(ncomp), C.int(inCS),
		C.int(jpegCS), C.int(quality), C.int(hs), C.int(vs), cBool(o.progressive), cBool(o.optimize), C.int(o.restart),
		&out, &outLen, &msg[0], C.size_t(len(msg)))
	switch rc {
	case C.FFJ_OK:
		defer C.free(unsafe.Pointer(out))
		return C.GoBytes(unsafe.Pointer(out), C.int(outLen)), nil
	case C.FFJ_ERR_NOMEM:
		return nil, fmt.Errorf("jpeg: encode: out of memory")
	default:
		return nil, fmt.Errorf("jpeg: encode: %s", C.GoString(&msg[0]))
	}
}

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
