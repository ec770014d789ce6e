package jpeg

/*
#include <stdlib.h>
#include "ffjpeg.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// ErrNotTranscodable is returned by Transcode for a JPEG it leaves to a
// pixel re-encode: anything but 8-bit YCbCr with 4:2:0 chroma subsampling,
// or a damaged one whose coefficients exceed what baseline Huffman coding
// of 8-bit samples can hold.
var ErrNotTranscodable = errors.New("jpeg: not transcodable in the DCT domain")

// Verify entropy-decodes every coefficient of the JPEG in data without the
// IDCT. A JPEG that passes decodes cleanly (the IDCT and colour conversion
// cannot fail), at about half the cost of a decode, crops cut at its
// restart markers included (it refuses stray bytes before a marker, which
// libjpeg may let pass).
func (d *Decoder) Verify(data []byte) error {
	if err := d.check(data); err != nil {
		return err
	}
	data = d.own(data)
	rc := C.ffj_verify(d.c, bytePtr(data), C.ulong(len(data)))
	runtime.KeepAlive(d)
	if rc != C.FFJ_OK {
		return fmt.Errorf("jpeg: decode: %s", d.message())
	}
	return nil
}

// Transcode re-encodes a 4:2:0 YCbCr JPEG as Encode would at quality, but
// without leaving the DCT domain: each coefficient is requantized from the
// source's table to the quality's (kept where the source's step is the
// coarser one), then Huffman-coded again. That skips the IDCT, colour
// conversion, chroma resampling and forward DCT of a decode and re-encode,
// and their rounding. The result is a baseline JPEG of the same size and
// sampling as Encode's. When no step changes (the source is at quality or
// coarser) and the source is a single baseline scan, that scan is kept as
// it is, after being entropy-decoded in full: the result is the source up
// to EOI without its APP1-13, APP15 and COM segments. Other JPEGs return
// ErrNotTranscodable.
//
// The result has restart markers lined up with MCU rows, which let a crop
// decode only the intervals under it (see DecodeCropResize). A kept scan
// without them gets them spliced in (decoded once to find the intervals,
// then copied bit for bit, each interval's first DC differences coded
// again; where the source's DC table lacks codes for them, every DC with
// the standard table), unless keepScan is set; one whose markers do not
// line up is Huffman-coded again. A
// scan with markers is kept only if every interval ends exactly at its
// marker, as the region decoder requires.
func (d *Decoder) Transcode(data []byte, quality int, keepScan bool) ([]byte, error) {
	if err := d.check(data); err != nil {
		return nil, err
	}
	if quality < 1 || quality > 100 {
		return nil, fmt.Errorf("jpeg: transcode: quality %d not in 1..100", quality)
	}
	data = d.own(data)
	var out *C.uchar
	var outLen C.size_t
	rc := C.ffj_transcode(d.c, bytePtr(data), C.ulong(len(data)), C.int(quality), cBool(keepScan), &out, &outLen)
	runtime.KeepAlive(d)
	switch rc {
	case C.FFJ_OK:
		defer C.free(unsafe.Pointer(out))
		return C.GoBytes(unsafe.Pointer(out), C.int(outLen)), nil
	case C.FFJ_ERR_FORMAT:
		return nil, ErrNotTranscodable
	case C.FFJ_ERR_NOMEM:
		return nil, fmt.Errorf("jpeg: transcode: out of memory")
	default:
		return nil, fmt.Errorf("jpeg: decode: %s", d.message())
	}
}

// requantize is ffj_requantize on n = len(coef)/64 blocks (for tests).
func requantize(coef []int16, from, to *[64]uint16) {
	if len(coef) >= 64 {
		C.ffj_requantize((*C.short)(unsafe.Pointer(&coef[0])), C.long(len(coef)/64),
			(*C.ushort)(unsafe.Pointer(&from[0])), (*C.ushort)(unsafe.Pointer(&to[0])))
	}
}

// coefsFit is ffj_coefs_fit on n = len(coef)/64 blocks (for tests).
func coefsFit(coef []int16) bool {
	if len(coef) < 64 {
		return true
	}
	return C.ffj_coefs_fit((*C.short)(unsafe.Pointer(&coef[0])), C.long(len(coef)/64)) != 0
}
