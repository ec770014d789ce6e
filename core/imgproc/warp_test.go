package imgproc

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/internal/testimg"
)

// warpRef is warp as a direct transcription of torch's per-pixel steps,
// kept as the reference the fast paths must match byte for byte.
func warpRef(dst, src []byte, h, w, ch int, m [6]float64, bilinear bool, fill []float32) {
	hw, hh := float32(0.5*float64(w)), float32(0.5*float64(h))
	t := [6]float32{float32(m[0]) / hw, float32(m[1]) / hw, float32(m[2]) / hw,
		float32(m[3]) / hh, float32(m[4]) / hh, float32(m[5]) / hh}
	halfW, halfH := float32(w)/2, float32(h)/2
	var acc [4]float32
	for y := 0; y < h; y++ {
		by := float32(y) - float32(float32(h-1)*0.5)
		for x := 0; x < w; x++ {
			bx := float32(x) - float32(float32(w-1)*0.5)
			// torch's CPU kernels, compiled with fused multiply-adds: the bmm
			// of the base grid with theta accumulates x term first, and
			// grid_sample unnormalises as fma(g + 1, size/2, -0.5) and sums
			// the bilinear corners with fmas. Shears like 0.2 put many
			// coordinates on rounding ties, where another order picks other
			// pixels.
			gx := fma32(by, t[1], float32(bx*t[0])) + t[2]
			gy := fma32(by, t[4], float32(bx*t[3])) + t[5]
			ix := fma32(gx+1, halfW, -0.5)
			iy := fma32(gy+1, halfH, -0.5)
			o := dst[(y*w+x)*ch : (y*w+x+1)*ch]
			if !bilinear {
				sx, sy := int(math.RoundToEven(float64(ix))), int(math.RoundToEven(float64(iy)))
				if sx >= 0 && sx < w && sy >= 0 && sy < h {
					copy(o, src[(sy*w+sx)*ch:(sy*w+sx+1)*ch])
				} else {
					for k := range o {
						if fill != nil {
							o[k] = roundU8(fill[k%len(fill)])
						} else {
							o[k] = 0
						}
					}
				}
				continue
			}
			x0f, y0f := float32(math.Floor(float64(ix))), float32(math.Floor(float64(iy)))
			x0, y0 := int(x0f), int(y0f)
			// torch's weights: w, n the distances to the west and north
			// corners, e = 1-w, s = 1-n; nw, ne, sw, se summed in that order.
			we, no := ix-x0f, iy-y0f
			ea, so := 1-we, 1-no
			wts := [4]float32{float32(so * ea), float32(so * we), float32(no * ea), float32(no * we)}
			cx := [4]int{x0, x0 + 1, x0, x0 + 1}
			cy := [4]int{y0, y0, y0 + 1, y0 + 1}
			acc = [4]float32{}
			var mask float32
			for k := 0; k < 4; k++ {
				if cx[k] < 0 || cx[k] >= w || cy[k] < 0 || cy[k] >= h {
					continue
				}
				p := src[(cy[k]*w+cx[k])*ch:]
				for c := 0; c < ch; c++ {
					acc[c] = fma32(float32(p[c]), wts[k], acc[c])
				}
				mask += wts[k]
			}
			for c := 0; c < ch; c++ {
				v := acc[c]
				if fill != nil {
					f := fill[c%len(fill)]
					v = float32(float32(v-f)*mask) + f
				}
				o[c] = roundU8(v)
			}
		}
	}
}

// randomWarp draws a geometric case: a size, channels, fill and a matrix
// mixing rotation, shear, translation and scale as the policies and
// RandomAffine make them.
func randomWarp(r *rand.Rand) (h, w, ch int, m [6]float64, bilinear bool, fill []float32) {
	h, w = 1+r.IntN(40), 1+r.IntN(40)
	if r.IntN(4) == 0 {
		h, w = 224, 224
	}
	ch = []int{1, 3}[r.IntN(2)]
	switch r.IntN(3) {
	case 1:
		fill = []float32{float32(r.IntN(256))}
	case 2:
		fill = make([]float32, ch)
		for i := range fill {
			fill[i] = float32(r.Float64() * 255)
		}
	}
	deg := func(max float64) float64 {
		if r.IntN(3) == 0 {
			return 0
		}
		return (2*r.Float64() - 1) * max
	}
	// Shears on the policies' bins (ties are common there) or anywhere.
	shear := func() float64 {
		if r.IntN(2) == 0 {
			return math.Atan(Linspace32(0, raShear, 31, r.IntN(31))) * 180 / math.Pi
		}
		return deg(40)
	}
	scale := 1.0
	if r.IntN(3) == 0 {
		scale = 0.5 + r.Float64()
	}
	m = InvAffine(-0.5*float64(w)*float64(r.IntN(2)), -0.5*float64(h)*float64(r.IntN(2)),
		deg(180), math.Trunc(deg(float64(w))), math.Trunc(deg(float64(h))), scale, shear(), shear())
	return h, w, ch, m, r.IntN(2) == 0, fill
}

func TestWarpMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < draws(3000); i++ {
		h, w, ch, m, bil, fill := randomWarp(r)
		src := testimg.PhotoLike(h, w, ch)
		want, got := make([]byte, len(src)), make([]byte, len(src))
		warpRef(want, src, h, w, ch, m, bil, fill)
		Warp(got, src, h, w, ch, m, bil, fill)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d: %dx%dx%d m=%v bilinear=%v fill=%v: %d values differ", i, h, w, ch, m, bil, fill, countDiff(got, want))
		}
	}
}

// The policies' shears on every bin, both signs, where ShearX rows are copies.
func TestWarpShearBins(t *testing.T) {
	for _, size := range [][3]int{{224, 224, 3}, {20, 24, 3}, {31, 17, 1}, {2, 1, 3}} {
		h, w, ch := size[0], size[1], size[2]
		src := testimg.PhotoLike(h, w, ch)
		want, got := make([]byte, len(src)), make([]byte, len(src))
		for i := 0; i < 31; i++ {
			for _, sign := range []float64{1, -1} {
				for _, op := range []string{"ShearX", "ShearY"} {
					for _, fill := range [][]float32{nil, {9}} {
						mag := sign * Linspace32(0, taShear, 31, i)
						sh := math.Atan(mag) * 180 / math.Pi
						m := InvAffine(-0.5*float64(w), -0.5*float64(h), 0, 0, 0, 1, sh, 0)
						if op == "ShearY" {
							m = InvAffine(-0.5*float64(w), -0.5*float64(h), 0, 0, 0, 1, 0, sh)
						}
						warpRef(want, src, h, w, ch, m, false, fill)
						Warp(got, src, h, w, ch, m, false, fill)
						if !slices.Equal(got, want) {
							t.Fatalf("%v %s magnitude %v fill %v: %d values differ", size, op, mag, fill, countDiff(got, want))
						}
					}
				}
			}
		}
	}
}

func TestShiftMatchesWarp(t *testing.T) {
	for _, size := range [][2]int{{1, 1}, {2, 3}, {7, 5}, {24, 20}, {33, 64}, {224, 224}, {225, 223}} {
		h, w := size[0], size[1]
		for _, ch := range []int{1, 3} {
			src := testimg.PhotoLike(h, w, ch)
			want, got := make([]byte, len(src)), make([]byte, len(src))
			for _, fill := range [][]float32{nil, {7.5}, {7}, []float32{200, 1, 99.6}[:ch], []float32{255, 0, 3}[:ch]} {
				for _, bil := range []bool{false, true} {
					if !Shiftable(bil, fill) {
						continue
					}
					for _, d := range []int{-w - 1, -w, -w + 1, -101, -3, -1, 0, 1, 2, 37, w - 1, w, w + 5} {
						for _, xy := range []bool{false, true} {
							dx, dy := d, 0
							if xy {
								dx, dy = 0, d*h/max(w, 1)
							}
							warpRef(want, src, h, w, ch, InvAffine(0, 0, 0, float64(dx), float64(dy), 1, 0, 0), bil, fill)
							Shift(got, src, h, w, ch, dx, dy, fill)
							if !slices.Equal(got, want) {
								t.Fatalf("%dx%dx%d shift (%d, %d) bilinear=%v fill=%v: %d values differ", h, w, ch, dx, dy, bil, fill, countDiff(got, want))
							}
						}
					}
				}
			}
		}
	}
}

// Matrices whose input column depends only on the output column (ShearY,
// translations, with or without fill) take warpNearest's column path; on
// the policies' bins, both signs, many sizes and offsets, it must match the
// reference byte for byte.
func TestWarpColumnsMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	bin := func() float64 {
		return math.Atan(Linspace32(0, taShear, 31, r.IntN(31))) * 180 / math.Pi
	}
	sign := func() float64 { return float64(1 - 2*r.IntN(2)) }
	cases := []struct {
		name  string
		shear func() float64      // degrees
		shift func(n int) float64 // a translation for a side of n
	}{
		{"bins", func() float64 { return sign() * bin() }, func(int) float64 { return 0 }},
		{"bins shifted", func() float64 { return sign() * bin() }, func(n int) float64 { return math.Trunc((2*r.Float64() - 1) * float64(n)) }},
		{"any", func() float64 { return (2*r.Float64() - 1) * 40 }, func(int) float64 { return 0 }},
		{"any shifted", func() float64 { return (2*r.Float64() - 1) * 40 }, func(n int) float64 { return (2*r.Float64() - 1) * float64(n) }},
		{"shift only", func() float64 { return 0 }, func(n int) float64 { return (2*r.Float64() - 1) * float64(n) }},
	}
	for _, tc := range cases {
		for i := 0; i < draws(400); i++ {
			h, w, ch, fill := warpCase(r, i)
			sh := tc.shear()
			m := InvAffine(-0.5*float64(w), -0.5*float64(h), 0, tc.shift(w), tc.shift(h), 1, 0, sh)
			src := testimg.PhotoLike(h, w, ch)
			want, got := make([]byte, len(src)), make([]byte, len(src))
			warpRef(want, src, h, w, ch, m, false, fill)
			Warp(got, src, h, w, ch, m, false, fill)
			if !slices.Equal(got, want) {
				t.Fatalf("%s case %d: %dx%dx%d shear %v m=%v fill=%v: %d values differ", tc.name, i, h, w, ch, sh, m, fill, countDiff(got, want))
			}
		}
	}
}

// warpCase is case i's image size, channels and fill (none, one value, or
// one fractional value per channel): every fourth 224x224, 1 and 3 channels
// in turn.
func warpCase(r *rand.Rand, i int) (h, w, ch int, fill []float32) {
	h, w = 1+r.IntN(64), 1+r.IntN(64)
	if i%4 == 0 {
		h, w = 224, 224
	}
	ch = []int{1, 3}[i%2]
	switch r.IntN(3) {
	case 1:
		fill = []float32{float32(r.IntN(256))}
	case 2:
		fill = make([]float32, ch)
		for k := range fill {
			fill[k] = float32(r.Float64() * 255)
		}
	}
	return h, w, ch, fill
}

// Rotations on the policies' bins, both signs, and at random angles, with
// and without fill, 1 and 3 channels: warpNearest's inside spans and its
// per-pixel ends must match the reference byte for byte.
func TestWarpRotateMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	sign := func() float64 { return float64(1 - 2*r.IntN(2)) }
	for _, tc := range []struct {
		name  string
		angle func() float64
	}{
		{"RandAugment bins", func() float64 { return sign() * Linspace32(0, raRotate, 31, r.IntN(31)) }},
		{"TrivialAugment bins", func() float64 { return sign() * Linspace32(0, taRotate, 31, r.IntN(31)) }},
		{"any", func() float64 { return (2*r.Float64() - 1) * 360 }},
	} {
		for i := 0; i < draws(300); i++ {
			h, w, ch, fill := warpCase(r, i)
			angle := tc.angle()
			m := InvAffine(0, 0, -angle, 0, 0, 1, 0, 0)
			src := testimg.PhotoLike(h, w, ch)
			want, got := make([]byte, len(src)), make([]byte, len(src))
			warpRef(want, src, h, w, ch, m, false, fill)
			Warp(got, src, h, w, ch, m, false, fill)
			if !slices.Equal(got, want) {
				t.Fatalf("%s case %d: %dx%dx%d angle %v fill=%v: %d values differ", tc.name, i, h, w, ch, angle, fill, countDiff(got, want))
			}
		}
	}
}
