//go:build !(amd64 || arm64) || !cgo

package imgproc

// Without the C kernels every path runs the Go code.
var (
	haveSIMD = false
	useAVX2  = false
)

func (r *Resizer) areaRunSIMD(dst []byte, dw, dh int, src []byte, srcStride int) {
	panic("imgproc: no SIMD kernels in this build")
}

func (r *Resizer) linearRunSIMD(dst []byte, dw, dh int, src []byte, sh, srcStride int) {
	panic("imgproc: no SIMD kernels in this build")
}

func hsvLUTC(img []byte, w int, lutH, lutS, lutV *[256]byte) {
	panic("imgproc: no C kernels in this build")
}
