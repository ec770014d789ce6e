package imgproc

import (
	"fmt"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/internal/testimg"
)

// BenchmarkSSLOps times the kernels of each per-sample op of a SimCLR
// view on a 224×224×3 textured image; ns/op is one image.
func BenchmarkSSLOps(b *testing.B) {
	const h, w, c = 224, 224, 3
	src := testimg.PhotoLike(h, w, c)
	img := make([]byte, len(src))
	cases := []struct {
		name string
		f    func(*Blurrer)
	}{
		{"brightness", func(*Blurrer) { Brightness(img, 1.3) }},
		{"contrast", func(*Blurrer) { Contrast(img, c, 0.7) }},
		{"saturation", func(*Blurrer) { Saturation(img, c, 1.4, nil) }},
		{"hue", func(*Blurrer) { Hue(img, c, 0.07) }},
		{"grayscale", func(*Blurrer) { Grayscale(img, c) }},
	}
	for _, sigma := range []float64{0.1, 1, 2} {
		cases = append(cases, struct {
			name string
			f    func(*Blurrer)
		}{fmt.Sprintf("blur23_sigma%v", sigma), func(b *Blurrer) { b.GaussianBlur(img, h, w, c, 23, sigma) }})
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var blur Blurrer
			b.SetBytes(int64(len(img)))
			for i := 0; i < b.N; i++ {
				copy(img, src)
				tc.f(&blur)
			}
		})
	}
}
