package imgproc

import (
	"bytes"
	"testing"

	"golang.org/x/sys/cpu"
)

// OpenCV's bilinear warps on small cases whose answers are known: the
// identity copies, a whole-pixel shift moves rows and fills the rest, a
// half-pixel shift averages neighbours (weights 1/2 in 15-bit fixed point,
// rounded half up), and the corners outside read the fill.
func TestWarpCV(t *testing.T) {
	src := []byte{
		10, 20, 30, 40,
		50, 60, 70, 80,
		90, 100, 110, 120,
	}
	fill := []byte{7}
	for _, tc := range []struct {
		name   string
		m      [9]float64
		dh, dw int
		want   []byte
	}{
		{"identity", [9]float64{1, 0, 0, 0, 1, 0, 0, 0, 1}, 3, 4, src},
		{"shift right 1, up 1", [9]float64{1, 0, 1, 0, 1, -1, 0, 0, 1}, 3, 4, []byte{
			7, 50, 60, 70,
			7, 90, 100, 110,
			7, 7, 7, 7}},
		{"half a pixel left", [9]float64{1, 0, -0.5, 0, 1, 0, 0, 0, 1}, 1, 4, []byte{15, 25, 35, 24}},
		{"larger output", [9]float64{1, 0, 0, 0, 1, 0, 0, 0, 1}, 2, 5, []byte{10, 20, 30, 40, 7, 50, 60, 70, 80, 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aff := make([]byte, tc.dh*tc.dw)
			WarpAffineCV(aff, tc.dh, tc.dw, src, 3, 4, 1, [6]float64(tc.m[:6]), fill)
			per := make([]byte, tc.dh*tc.dw)
			WarpPerspectiveCV(per, tc.dh, tc.dw, src, 3, 4, 1, tc.m, fill)
			if !bytes.Equal(aff, tc.want) || !bytes.Equal(per, tc.want) {
				t.Fatalf("warpAffine %v, warpPerspective %v; want %v", aff, per, tc.want)
			}
		})
	}
}

// The RGB row path of WarpAffineCV gives what the per-pixel path gives,
// for maps that rotate, scale, shear and leave the image.
func TestWarpAffineRGBRows(t *testing.T) {
	const sh, sw = 37, 53
	src := make([]byte, sh*sw*3)
	for i := range src {
		src[i] = byte(i*7 + i/3*13)
	}
	fill := []byte{114, 115, 116}
	defer func(v bool) { useAVX2 = v }(useAVX2)
	for _, avx := range []bool{false, cpu.X86.HasAVX2} { // the C rows' two builds on x86-64
		useAVX2 = avx
		testWarpAffineRGBRows(t, src, sh, sw, fill)
	}
}

func testWarpAffineRGBRows(t *testing.T, src []byte, sh, sw int, fill []byte) {
	for _, m := range [][6]float64{
		{1, 0, 0, 0, 1, 0},
		{0.8, -0.3, 5.25, 0.35, 0.9, -3.7},
		{1.7, 0.2, -20, -0.1, 1.4, 2.5},
		{-1, 0, 52.5, 0, -1, 36.25},
		{2, 0.01, 2.3, -0.02, 2, 3.1}, // enlarged: groups of eight wholly inside
	} {
		const dh, dw = 41, 47
		got := make([]byte, dh*dw*3)
		WarpAffineCV(got, dh, dw, src, sh, sw, 3, m, fill)
		// The per-pixel path: the image's three channels warped one by one.
		for c := 0; c < 3; c++ {
			plane := make([]byte, sh*sw)
			for i := range plane {
				plane[i] = src[3*i+c]
			}
			want := make([]byte, dh*dw)
			WarpAffineCV(want, dh, dw, plane, sh, sw, 1, m, fill[c:c+1])
			for i, v := range want {
				if got[3*i+c] != v {
					t.Fatalf("AVX2 %v, m %v: pixel %d channel %d = %d, want %d", useAVX2, m, i, c, got[3*i+c], v)
				}
			}
		}
	}
}

// BenchmarkWarpAffineRGB: YOLO's warp, a 1280×1280 mosaic canvas to 640×640
// at scale 0.9 with a few degrees of rotation.
func BenchmarkWarpAffineRGB(b *testing.B) {
	const sh, sw, dh, dw = 1280, 1280, 640, 640
	src := make([]byte, sh*sw*3)
	for i := range src {
		src[i] = byte(i*7 + i/3*13)
	}
	dst := make([]byte, dh*dw*3)
	m := [6]float64{0.896, 0.078, -290, -0.078, 0.896, -250}
	b.SetBytes(int64(len(dst)))
	for i := 0; i < b.N; i++ {
		WarpAffineCV(dst, dh, dw, src, sh, sw, 3, m, []byte{114, 114, 114})
	}
}
