package imgproc

import (
	"image"
	"math/rand/v2"
	"testing"
)

func randImage(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// For integer-aligned regions that shrink, ResizeAreaRegion must agree with
// ResizeArea on the cropped pixels: the only differences are OpenCV's 1e-3
// weight thresholds and float rounding, worth at most one level.
func TestResizeAreaRegionMatchesCrop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const w, h, c = 120, 90, 3
	src := randImage(rng, w*h*c)
	tests := []struct {
		r      image.Rectangle
		dw, dh int
	}{
		{image.Rect(0, 0, w, h), 60, 45},
		{image.Rect(0, 0, w, h), 37, 29},
		{image.Rect(10, 7, 110, 80), 33, 20},
		{image.Rect(1, 1, 9, 9), 3, 2},
		{image.Rect(50, 20, 120, 90), 70, 23},
	}
	var rs, ref Resizer
	for _, tt := range tests {
		got := make([]byte, tt.dw*tt.dh*c)
		want := make([]byte, len(got))
		reg := RectF{float64(tt.r.Min.X), float64(tt.r.Min.Y), float64(tt.r.Max.X), float64(tt.r.Max.Y)}
		rs.ResizeAreaRegion(got, tt.dw, tt.dh, src, w, h, w*c, c, reg)
		ref.ResizeArea(want, tt.dw, tt.dh, SubRect(src, w*c, c, tt.r), tt.r.Dx(), tt.r.Dy(), w*c, c)
		if md, n := diffStats(got, want); md > 1 {
			t.Errorf("%v -> %dx%d: max diff %d (%d bytes)", tt.r, tt.dw, tt.dh, md, n)
		}
	}
}

// A horizontal ramp v(x) = 2x+1 box-filtered over [a, b) has mean 2·mid+1
// where mid = (a+b)/2 minus the pixel-centre offset, which lets us check
// sub-pixel placement exactly.
func TestResizeAreaRegionSubPixel(t *testing.T) {
	const w, h = 100, 4
	src := make([]byte, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			src[y*w+x] = byte(2*x + 1)
		}
	}
	tests := []struct {
		x0, x1 float64
		dw     int
	}{
		{10.5, 30.5, 10},
		{0.25, 40.25, 16},
		{3, 99.5, 7},
		{20.5, 21.5, 1}, // half of two pixels each
		{20.25, 20.75, 1},
	}
	var rs Resizer
	for _, tt := range tests {
		dst := make([]byte, tt.dw*2)
		rs.ResizeAreaRegion(dst, tt.dw, 2, src, w, h, w, 1, RectF{tt.x0, 1, tt.x1, 3})
		cell := (tt.x1 - tt.x0) / float64(tt.dw)
		for i := 0; i < tt.dw; i++ {
			// Mean of a piecewise-constant ramp: the exact area integral.
			a, b := tt.x0+float64(i)*cell, tt.x0+float64(i+1)*cell
			var s float64
			for k := int(a); float64(k) < b; k++ {
				lo, hi := max(a, float64(k)), min(b, float64(k+1))
				s += (hi - lo) * float64(2*k+1)
			}
			want := s / (b - a)
			for _, got := range []byte{dst[i], dst[tt.dw+i]} {
				if d := float64(got) - want; d > 0.5001 || d < -0.5001 {
					t.Errorf("[%v,%v) cell %d: got %d, want %.3f", tt.x0, tt.x1, i, got, want)
				}
			}
		}
	}
}

func TestResizeAreaRegionPanicsOutside(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a region outside the image")
		}
	}()
	var rs Resizer
	rs.ResizeAreaRegion(make([]byte, 4), 2, 2, make([]byte, 16), 4, 4, 4, 1, RectF{0, 0, 4.5, 4})
}

// The Resizer promises an allocation-free hot loop once its tables exist.
func TestResizerNoAllocs(t *testing.T) {
	src := make([]byte, 500*375*3)
	dst := make([]byte, 224*224*3)
	var rs Resizer
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"area", func() { rs.ResizeArea(dst, 224, 224, src, 500, 375, 1500, 3) }},
		{"fast", func() { rs.ResizeArea(dst, 250, 125, src, 500, 375, 1500, 3) }},
		{"linear", func() { rs.ResizeArea(dst, 224, 224, src, 200, 150, 600, 3) }},
		{"region", func() {
			rs.ResizeAreaRegion(dst, 224, 224, src, 500, 375, 1500, 3, RectF{0.5, 1.25, 499, 374})
		}},
	} {
		if n := testing.AllocsPerRun(5, tc.f); n != 0 {
			t.Errorf("%s: %v allocs per run", tc.name, n)
		}
	}
}
