//go:build cgo

package imgproc

import "golang.org/x/sys/cpu"

// haveSIMD enables the C kernels; useAVX2 selects their AVX2 build (SSE2 is
// the x86-64 floor). By default AVX2 is used where the CPU has it.
// Variables so tests can run every combination.
var (
	haveSIMD = simdMode != "off"
	useAVX2  = cpu.X86.HasAVX2 && simdMode != "sse2"
)
