package imgproc

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"golang.org/x/sys/cpu"
)

// goResize is the pure-Go result of ResizeAreaFlip (the reference the C
// kernels must reproduce byte for byte).
func goResize(dst []byte, dw, dh int, src []byte, sw, sh, stride int, flip bool) {
	var r Resizer
	goResizeFlip(&r, dst, dw, dh, src, sw, sh, stride, flip)
}

func goResizeCached(r *Resizer, dst []byte, dw, dh int, src []byte, sw, sh, stride int) {
	goResizeFlip(r, dst, dw, dh, src, sw, sh, stride, false)
}

func goResizeFlip(r *Resizer, dst []byte, dw, dh int, src []byte, sw, sh, stride int, flip bool) {
	invX, invY := float64(dw)/float64(sw), float64(dh)/float64(sh)
	scaleX, scaleY := 1/invX, 1/invY
	if scaleX >= 1 && scaleY >= 1 {
		r.prepareArea(sw, sh, dw, dh, 3, scaleX, scaleY, flip)
		r.areaRun(dst, dw, dh, src, stride, 3)
		return
	}
	r.prepareLinear(sw, sh, dw, dh, 3, scaleX, scaleY, invX, invY, false, false, false)
	r.linearRun(dst, dw, dh, src, sh, stride, 3)
	flipAfter(dst, dw, dh, 3, flip)
}

// The C kernels (SSE2 and AVX2, or NEON) agree with the Go code on every geometry the
// loader meets (shrink, grow, mixed, thin, stride padding, mirrored), with
// the source slice ending exactly at its last pixel.
func TestSIMDMatchesGo(t *testing.T) {
	if !haveSIMD {
		t.Skip("no SIMD kernels in this build")
	}
	defer func(v bool) { useAVX2 = v }(useAVX2)
	if runtime.GOARCH == "amd64" && !cpu.X86.HasAVX2 {
		t.Log("no AVX2 on this CPU: testing SSE2 only")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	sizes := [][4]int{
		{500, 375, 224, 224}, {300, 260, 224, 224}, {160, 120, 224, 224}, {300, 100, 224, 224},
		{100, 300, 224, 224}, {2, 2, 5, 3}, {7, 5, 3, 2}, {225, 225, 224, 224}, {447, 449, 224, 224},
		{33, 17, 10, 40}, {2, 9, 1, 4}, {5, 1, 2, 1}, {640, 480, 31, 17},
		// 4, 5 and 6 taps per output pixel: the AVX2 shuffle path takes up to 5.
		{560, 300, 224, 120}, {700, 520, 224, 224}, {900, 900, 224, 224},
	}
	for _, avx := range []bool{false, cpu.X86.HasAVX2} {
		useAVX2 = avx
		for _, sz := range sizes {
			for _, pad := range []int{0, 5} {
				for _, flip := range []bool{false, true} {
					sw, sh, dw, dh := sz[0], sz[1], sz[2], sz[3]
					name := fmt.Sprintf("avx2=%v/%dx%d->%dx%d/pad%d/flip=%v", avx, sw, sh, dw, dh, pad, flip)
					stride := sw*3 + pad
					src := randImage(rng, (sh-1)*stride+sw*3)
					want := make([]byte, dw*dh*3)
					got := make([]byte, dw*dh*3)
					goResize(want, dw, dh, src, sw, sh, stride, flip)
					var r Resizer
					r.ResizeAreaFlip(got, dw, dh, src, sw, sh, stride, 3, flip)
					if !bytes.Equal(got, want) {
						md, n := diffStats(got, want)
						t.Errorf("%s: C differs from Go: max %d, %d bytes", name, md, n)
					}
				}
			}
		}
	}
}

// Flipping through the tables gives exactly the mirror of the unflipped
// result, on every path (identity, integer factor, area, region, linear)
// and channel count.
func TestResizeFlipIsMirror(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, cn := range []int{1, 3, 4} {
		for _, sz := range [][4]int{{40, 30, 40, 30}, {40, 30, 20, 15}, {41, 29, 17, 13}, {20, 15, 33, 40}, {50, 10, 20, 30}} {
			sw, sh, dw, dh := sz[0], sz[1], sz[2], sz[3]
			src := randImage(rng, sw*sh*cn)
			var r Resizer
			plain := make([]byte, dw*dh*cn)
			flipped := make([]byte, dw*dh*cn)
			r.ResizeArea(plain, dw, dh, src, sw, sh, sw*cn, cn)
			r.ResizeAreaFlip(flipped, dw, dh, src, sw, sh, sw*cn, cn, true)
			flipAfter(plain, dw, dh, cn, true)
			if !bytes.Equal(plain, flipped) {
				t.Errorf("cn=%d %dx%d->%dx%d: flipped resize is not the mirror", cn, sw, sh, dw, dh)
			}
			if sw < dw || sh < dh {
				continue
			}
			reg := RectF{0.25, 0.5, float64(sw) - 0.75, float64(sh) - 0.25}
			r.ResizeAreaRegion(plain, dw, dh, src, sw, sh, sw*cn, cn, reg)
			r.ResizeAreaRegionFlip(flipped, dw, dh, src, sw, sh, sw*cn, cn, reg, true)
			flipAfter(plain, dw, dh, cn, true)
			if !bytes.Equal(plain, flipped) {
				t.Errorf("cn=%d %dx%d->%dx%d: flipped region is not the mirror", cn, sw, sh, dw, dh)
			}
		}
	}
}

// FuzzSIMDMatchesGo checks the C kernels against the Go code on any small
// geometry, with the source slice ending at its last pixel.
func FuzzSIMDMatchesGo(f *testing.F) {
	f.Add(uint8(7), uint8(5), uint8(3), uint8(2), uint8(0), false, false, uint64(1))
	f.Add(uint8(2), uint8(2), uint8(5), uint8(3), uint8(3), true, true, uint64(2))
	f.Add(uint8(64), uint8(9), uint8(17), uint8(40), uint8(1), true, false, uint64(3))
	f.Fuzz(func(t *testing.T, sw, sh, dw, dh, pad uint8, flip, avx bool, seed uint64) {
		if !haveSIMD || sw < 2 || sh < 1 || dw < 1 || dh < 1 || sw > 96 || sh > 96 || dw > 96 || dh > 96 {
			return
		}
		defer func(v bool) { useAVX2 = v }(useAVX2)
		useAVX2 = avx && cpu.X86.HasAVX2
		stride := int(sw)*3 + int(pad%8)
		src := randImage(rand.New(rand.NewPCG(seed, 1)), (int(sh)-1)*stride+int(sw)*3)
		want := make([]byte, int(dw)*int(dh)*3)
		got := make([]byte, len(want))
		goResize(want, int(dw), int(dh), src, int(sw), int(sh), stride, flip)
		var r Resizer
		r.ResizeAreaFlip(got, int(dw), int(dh), src, int(sw), int(sh), stride, 3, flip)
		if sw == dw && sh == dh {
			return // the identity copy is not a kernel
		}
		invX, invY := float64(dw)/float64(sw), float64(dh)/float64(sh)
		if 1/invX >= 1 && 1/invY >= 1 && isInt(1/invX) && isInt(1/invY) {
			return // integer factors run areaFast (Go), not these kernels
		}
		if !bytes.Equal(got, want) {
			md, n := diffStats(got, want)
			t.Fatalf("%dx%d->%dx%d pad %d flip %v avx2 %v: C differs from Go by %d in %d bytes",
				sw, sh, dw, dh, pad%8, flip, useAVX2, md, n)
		}
	})
}

func isInt(x float64) bool { return math.Abs(x-math.Round(x)) < dblEpsilon }
