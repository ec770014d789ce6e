//go:build cgo && (amd64 || arm64)

package imgproc

/*
#cgo CFLAGS: -O3 -fvisibility=hidden
#include "resize.h"
#include "hsv.h"
*/
import "C"

import (
	"os"
	"unsafe"
)

// FFCV_GO_SIMD=off forces the Go kernels (and on x86-64 FFCV_GO_SIMD=sse2
// the SSE2 floor), to compare them in one benchmark run.
var simdMode = os.Getenv("FFCV_GO_SIMD")

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// areaRunSIMD is areaRun for 3 channels in C. buf and sum have one spare
// element: the kernels store 4 floats per pixel. The AVX2 kernel reads 16
// bytes at a time, never past the end of src.
func (r *Resizer) areaRunSIMD(dst []byte, dw, dh int, src []byte, srcStride int) {
	r.fbuf = growF32(r.fbuf, dw*3+1)
	r.fsum = growF32(r.fsum, dw*3+1)
	r.fwx = growF32(r.fwx, (dw/2)*r.fx.n*8+1) // the AVX2 kernel's weights
	C.ffresize_area_run(cbool(useAVX2), (*C.uint8_t)(&dst[0]), C.int(dw), C.int(dh),
		(*C.uint8_t)(&src[0]), C.long(srcStride),
		(*C.int32_t)(&r.fx.first[0]), (*C.float)(&r.fx.w[0]), C.int(r.fx.n),
		(*C.int32_t)(&r.y.first[0]), (*C.int32_t)(&r.y.off[0]), (*C.float)(&r.y.w[0]),
		C.long(len(src)),
		(*C.float)(&r.fbuf[0]), (*C.float)(&r.fsum[0]), (*C.float)(&r.fwx[0]))
}

// linearRunSIMD is linearRun for 3 channels in C, on the tables of
// prepareLinearSIMD. The AVX2 kernel reads 16 bytes at a time, never past
// the end of src.
func (r *Resizer) linearRunSIMD(dst []byte, dw, dh int, src []byte, sh, srcStride int) {
	r.ibuf = growI32(r.ibuf, dw*3+1)
	r.ibuf2 = growI32(r.ibuf2, dw*3+1)
	C.ffresize_linear_run(cbool(useAVX2), (*C.uint8_t)(&dst[0]), C.int(dw), C.int(dh),
		(*C.uint8_t)(&src[0]), C.int(sh), C.long(srcStride),
		(*C.int32_t)(&r.sx.ofs[0]), (*C.int16_t)(unsafe.Pointer(&r.sx.a[0])),
		(*C.int32_t)(&r.ly.ofs[0]), (*C.int16_t)(unsafe.Pointer(&r.sy.a[0])),
		C.long(len(src)), (*C.int32_t)(&r.ibuf[0]), (*C.int32_t)(&r.ibuf2[0]))
}

// hsvBase holds the fixed tables of hsv.go as the C kernel takes them.
var hsvBase = func() (t C.ffhsv_tables) {
	for i := range 256 {
		t.sdiv[i], t.hdiv[i], t.unit[i] = C.int32_t(hsvSdiv[i]), C.int32_t(hsvHdiv[i]), C.float(hsvUnit[i])
	}
	for h, hu := range hsvHues {
		t.frac[h], t.omf[h], t.sector[h] = C.float(hu.frac), C.float(hu.omf), C.uint8_t(hu.sector)
	}
	for k, sec := range hsvSectors {
		for j, x := range sec {
			t.sectors[k][j] = C.uint8_t(x)
		}
	}
	return t
}()

// hsvLUTC is HSVLUT in C, on whole rows of img.
func hsvLUTC(img []byte, w int, lutH, lutS, lutV *[256]byte) {
	rows := len(img) / (3 * w)
	if rows == 0 {
		return
	}
	t := hsvBase
	for i := range 256 {
		t.lut_h[i], t.lut_s[i], t.lut_v[i] = C.uint8_t(lutH[i]), C.uint8_t(lutS[i]), C.uint8_t(lutV[i])
	}
	C.ffhsv_lut(cbool(useAVX2), (*C.uint8_t)(&img[0]), C.long(rows), C.int(w), C.int(w/HSVBlock*HSVBlock), &t)
}
