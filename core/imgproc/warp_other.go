//go:build !amd64 || !cgo

package imgproc

// Only x86-64 has the C warp row; elsewhere warpRow3 (Go) runs.
const haveWarpC = false

func warpRow3C(row, src []byte, sh, sw int, x0, y0 int32, adelta, bdelta []int32, fill []byte) {
	panic("imgproc: no C warp in this build")
}
