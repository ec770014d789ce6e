//go:build cgo

package imgproc

/*
#cgo CFLAGS: -O3 -fvisibility=hidden
#include "warp.h"
*/
import "C"

// haveWarpC: the SSE2 row of warp_amd64.c, unless FFCV_GO_SIMD=off.
var haveWarpC = simdMode != "off"

// warpRow3C is warpRow3 in C (same arguments, same bytes).
func warpRow3C(row, src []byte, sh, sw int, x0, y0 int32, adelta, bdelta []int32, fill []byte) {
	if len(adelta) == 0 || len(src) == 0 {
		return
	}
	_ = row[3*len(adelta)-1]
	_ = fill[2]
	C.ffwarp_row3(cbool(useAVX2), (*C.uint8_t)(&row[0]), (*C.uint8_t)(&src[0]), C.long(len(src)), C.int(sh), C.int(sw),
		C.int32_t(x0), C.int32_t(y0), (*C.int32_t)(&adelta[0]), (*C.int32_t)(&bdelta[0]), C.int(len(adelta)),
		(*C.uint8_t)(&fill[0]))
}
