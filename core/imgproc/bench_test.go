package imgproc

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"
)

func benchResize(b *testing.B, sw, sh, dw, dh int) {
	src := randImage(rand.New(rand.NewPCG(3, 4)), sw*sh*3)
	dst := make([]byte, dw*dh*3)
	var rs Resizer
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		rs.ResizeArea(dst, dw, dh, src, sw, sh, sw*3, 3)
	}
}

// BenchmarkResizeArea is the loader's typical case: a ~500×375 crop to 224².
func BenchmarkResizeArea(b *testing.B)        { benchResize(b, 500, 375, 224, 224) }
func BenchmarkResizeAreaInteger(b *testing.B) { benchResize(b, 448, 448, 224, 224) }
func BenchmarkResizeAreaUp(b *testing.B)      { benchResize(b, 160, 120, 224, 224) }

func BenchmarkResizeAreaRegion(b *testing.B) {
	const sw, sh = 300, 260
	src := randImage(rand.New(rand.NewPCG(3, 4)), sw*sh*3)
	dst := make([]byte, 224*224*3)
	var rs Resizer
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		rs.ResizeAreaRegion(dst, 224, 224, src, sw, sh, sw*3, 3, RectF{0.375, 0.5, 299.5, 258.25})
	}
}

// BenchmarkKernels compares the Go kernels with the C kernels (SSE2 and AVX2
// on x86-64, NEON on arm64) on the loader's geometries: run with -cpu 1 and
// compare within one run.
func BenchmarkKernels(b *testing.B) {
	defer func(v bool) { useAVX2 = v }(useAVX2)
	impls := []string{"go", "sse2", "avx2"}
	if runtime.GOARCH == "arm64" {
		impls = []string{"go", "neon"}
	}
	for _, sz := range [][4]int{{500, 375, 224, 224}, {300, 260, 224, 224}, {160, 120, 224, 224}} {
		sw, sh, dw, dh := sz[0], sz[1], sz[2], sz[3]
		src := randImage(rand.New(rand.NewPCG(3, 4)), sw*sh*3)
		dst := make([]byte, dw*dh*3)
		for _, impl := range impls {
			b.Run(fmt.Sprintf("%dx%d/%s", sw, sh, impl), func(b *testing.B) {
				if impl != "go" && !haveSIMD || impl == "avx2" && !cpu.X86.HasAVX2 {
					b.Skip("no such kernels here")
				}
				useAVX2 = impl == "avx2"
				var rs Resizer
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				t0 := threadCPU()
				defer func() { b.ReportMetric(float64(threadCPU()-t0)/float64(b.N), "cpu-ns/op") }()
				for b.Loop() {
					if impl == "go" {
						goResizeCached(&rs, dst, dw, dh, src, sw, sh, sw*3)
					} else {
						rs.ResizeArea(dst, dw, dh, src, sw, sh, sw*3, 3)
					}
				}
			})
		}
	}
}

// threadCPU is the calling thread's CPU time in nanoseconds: steadier than
// wall time on a busy machine.
func threadCPU() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}
