package imgproc

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/internal/testimg"
)

// Sharpen must give refSharpness's bytes (torch's float steps) for every
// factor the policies draw and others, on photos and noise, rows wider
// than its stack buffer included.
func TestSharpenMatchesFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	factors := enhanceFactors()
	for i := 0; i < draws(40); i++ {
		factors = append(factors, 4*r.Float64())
	}
	factors = append(factors, 0, 1, 2, 10, 255)
	noise := func(h, w, ch int) []byte {
		b := make([]byte, h*w*ch)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}
	for _, size := range [][3]int{{1, 5, 3}, {3, 3, 1}, {3, 4, 3}, {20, 24, 3}, {57, 31, 1}, {224, 224, 3}, {4, 1500, 3}, {3, 4097, 1}} {
		h, w, ch := size[0], size[1], size[2]
		for _, src := range [][]byte{testimg.PhotoLike(h, w, ch), noise(h, w, ch)} {
			for _, f := range factors {
				want, got := slices.Clone(src), slices.Clone(src)
				refSharpness(want, make([]byte, len(src)), h, w, ch, f)
				Sharpen(got, make([]byte, len(src)), h, w, ch, f, nil)
				tabbed := slices.Clone(src)
				Sharpen(tabbed, make([]byte, len(src)), h, w, ch, f, NewSharpenTable(f))
				if !slices.Equal(got, want) {
					t.Fatalf("%dx%dx%d factor %v: %d values differ", h, w, ch, f, countDiff(got, want))
				}
				if !slices.Equal(tabbed, want) {
					t.Fatalf("%dx%dx%d factor %v: %d values differ with the factor's table", h, w, ch, f, countDiff(tabbed, want))
				}
				step := slices.Clone(src)
				stepSharpen(step, make([]byte, len(src)), h, w, ch, f)
				if !slices.Equal(got, step) {
					t.Fatalf("%dx%dx%d factor %v: %d values differ from the step version", h, w, ch, f, countDiff(got, step))
				}
			}
		}
	}
}

// Every entry of Sharpen's table must be torch's float blend of the centre
// with the smoothed value, for every factor.
func TestSharpTableExhaustive(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	factors := []float64{0, 0.1, 0.5, 1, 1.27, 0.73, 1.9, 2, 10, 255, 1e-9, 1 + 1e-9}
	for range 100 {
		factors = append(factors, 3*r.Float64())
	}
	for _, f := range factors {
		var tab SharpenTable
		sharpFill(&tab, f)
		alpha := float32(1 - f)
		for blur := range 256 {
			for c := range 256 {
				x := float32(c)
				if got, want := tab[blur][c], TruncU8(fma32(float32(blur)-x, alpha, x)); got != want {
					t.Fatalf("factor %v smoothed %d centre %d: %d, want %d", f, blur, c, got, want)
				}
			}
		}
	}
}

// stepSharpen is Sharpen as it was before its table: per value, a floored
// step by difference, with torch's float steps where a float32 rounding
// may carry. A reference byte for byte.
func stepSharpen(img, scratch []byte, h, w, ch int, f float64) {
	if h <= 2 || w <= 2 {
		return
	}
	copy(scratch, img)
	alpha := float32(1 - f)
	var step [512]int32 // by d + 255; a power of two, so a mask elides bounds checks
	for d := -255; d <= 255; d++ {
		e := float64(d) * float64(alpha)
		fl := math.Floor(e)
		// Below 256 a float32's half ulp is 2^-17 at most; beyond, both clamp.
		if e-fl > 1-0x1p-12 {
			step[d+255] = stepCarry
		} else {
			step[d+255] = int32(max(min(fl, 1024), -1024))
		}
	}
	stride := w * ch
	n := stride - 2*ch // a row's interior
	// Column sums of three rows, then each 3×3 sum is three of them; a
	// chunk of the row at a time, in a buffer on the stack.
	var colBuf [4096]uint16
	chunk := len(colBuf) - 2*ch
	for y := 1; y < h-1; y++ {
		up := scratch[(y-1)*stride : y*stride]
		mid := scratch[y*stride : (y+1)*stride]
		dn := scratch[(y+1)*stride : (y+2)*stride]
		row := img[y*stride : (y+1)*stride]
		for a := 0; a < n; a += chunk {
			m := min(chunk, n-a)
			cols := colBuf[:m+2*ch]
			u, c, d := up[a:a+len(cols)], mid[a:a+len(cols)], dn[a:a+len(cols)]
			for i := range cols {
				cols[i] = uint16(u[i]) + uint16(c[i]) + uint16(d[i])
			}
			stepSharpenRun(row[a+ch:a+ch+m], mid[a+ch:a+ch+m], cols[:m], cols[ch:ch+m], cols[2*ch:2*ch+m], &step, alpha)
		}
	}
}

// stepSharpenRun sharpens a run of a row: outs from the centres mids and the
// column sums to their left, at them and to their right. Windows of one
// length let the compiler drop the bounds checks.
func stepSharpenRun(outs, mids []byte, left, centre, right []uint16, step *[512]int32, alpha float32) {
	mids, left, centre, right = mids[:len(outs)], left[:len(outs)], centre[:len(outs)], right[:len(outs)]
	for i := range outs {
		c := uint32(mids[i])
		s := uint32(left[i]) + uint32(centre[i]) + uint32(right[i]) + 4*c
		blur := uint32(smoothed[s&4095])
		st := step[(blur+255-c)&511]
		if st == stepCarry {
			x := float32(c)
			outs[i] = TruncU8(fma32(float32(blur)-x, alpha, x))
			continue
		}
		v := int32(c) + st
		if uint32(v) > 255 {
			v = ^(v >> 31) & 255 // 0 below, 255 above
		}
		outs[i] = byte(v)
	}
}

// stepCarry marks a blend step taking torch's float steps.
const stepCarry = math.MinInt32

// refSharpness is torch's float steps, the reference Sharpen must equal:
// it blends the image with its 3x3 smoothed version (1/13 around,
// 5/13 in the middle, rounded); the border rows and columns stay.
func refSharpness(img, scratch []byte, h, w, ch int, f float64) {
	if h <= 2 || w <= 2 {
		return
	}
	copy(scratch, img)
	const a, b = float32(1.0 / 13), float32(5.0 / 13)
	alpha := float32(1 - f)
	stride := w * ch
	for y := 1; y < h-1; y++ {
		up, mid, dn := scratch[(y-1)*stride:y*stride], scratch[y*stride:(y+1)*stride], scratch[(y+1)*stride:(y+2)*stride]
		row := img[y*stride : (y+1)*stride]
		for i := ch; i < stride-ch; i++ {
			// Products are rounded before each sum (no fusion), as a float32
			// convolution does; the summation order is torch's row order.
			s := float32(float32(up[i-ch]) * a)
			s += float32(float32(up[i]) * a)
			s += float32(float32(up[i+ch]) * a)
			s += float32(float32(mid[i-ch]) * a)
			s += float32(float32(mid[i]) * b)
			s += float32(float32(mid[i+ch]) * a)
			s += float32(float32(dn[i-ch]) * a)
			s += float32(float32(dn[i]) * a)
			s += float32(float32(dn[i+ch]) * a)
			blur := float32(math.RoundToEven(float64(s)))
			x := float32(mid[i])
			row[i] = TruncU8(fma32(blur-x, alpha, x))
		}
	}
}
