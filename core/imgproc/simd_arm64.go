//go:build cgo

package imgproc

// haveSIMD enables the NEON kernels (NEON is part of arm64); useAVX2 is
// x86-64's and stays false.
var (
	haveSIMD = simdMode != "off"
	useAVX2  = false
)
