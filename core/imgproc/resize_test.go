package imgproc

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestSat8(t *testing.T) {
	for _, tc := range []struct {
		in   float32
		want uint8
	}{
		{0, 0}, {0.49, 0}, {0.5, 0}, {0.51, 1}, {1.5, 2}, {2.5, 2}, {254.5, 254},
		{254.51, 255}, {255.49, 255}, {300, 255}, {-0.4, 0}, {-7, 0}, {127.5, 128},
	} {
		if got := sat8(tc.in); got != tc.want {
			t.Errorf("sat8(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
	// Exhaustive over a fine grid against math.RoundToEven.
	for v := float32(-3); v < 260; v += 1.0 / 64 {
		want := math.RoundToEven(float64(v))
		want = math.Min(math.Max(want, 0), 255)
		if got := sat8(v); float64(got) != want {
			t.Fatalf("sat8(%v) = %d, want %v", v, got, want)
		}
	}
}

// A padded source stride (a crop of a bigger image) must give the same
// result as the tightly packed copy, on every code path.
func TestResizeAreaStride(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const sw, sh, pad = 41, 29, 13
	for _, cn := range []int{1, 3, 4} {
		tight := randImage(rng, sw*sh*cn)
		padded := make([]byte, (sw*cn+pad)*sh)
		for y := 0; y < sh; y++ {
			copy(padded[y*(sw*cn+pad):], tight[y*sw*cn:(y+1)*sw*cn])
		}
		for _, sz := range [][2]int{{sw, sh}, {20, 14}, {41, 29 * 2}, {13, 7}, {82, 29}, {100, 3}} {
			dw, dh := sz[0], sz[1]
			a := make([]byte, dw*dh*cn)
			b := make([]byte, dw*dh*cn)
			ResizeArea(a, dw, dh, tight, sw, sh, sw*cn, cn)
			ResizeArea(b, dw, dh, padded[:len(padded)-pad], sw, sh, sw*cn+pad, cn)
			if md, _ := diffStats(a, b); md != 0 {
				t.Errorf("cn=%d %dx%d: padded stride differs by %d", cn, dw, dh, md)
			}
		}
	}
}

func TestResizeAreaPanics(t *testing.T) {
	src := make([]byte, 10*10*3)
	dst := make([]byte, 5*5*3)
	for name, f := range map[string]func(){
		"zero size":   func() { ResizeArea(dst, 0, 5, src, 10, 10, 30, 3) },
		"short dst":   func() { ResizeArea(dst[:74], 5, 5, src, 10, 10, 30, 3) },
		"short src":   func() { ResizeArea(dst, 5, 5, src[:299], 10, 10, 30, 3) },
		"bad stride":  func() { ResizeArea(dst, 5, 5, src, 10, 10, 29, 3) },
		"no channels": func() { ResizeArea(dst, 5, 5, src, 10, 10, 30, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
