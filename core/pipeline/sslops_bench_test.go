package pipeline

import (
	"fmt"
	"testing"
)

// BenchmarkSSLOps times each per-sample op of a SimCLR view on a 224×224×3
// textured image; ns/op is one image.
func BenchmarkSSLOps(b *testing.B) {
	const h, w, c = 224, 224, 3
	src := photoLike(h, w, c)
	img := make([]byte, len(src))
	cases := []struct {
		name string
		f    func(cx *Ctx)
	}{
		{"brightness", func(*Ctx) { tvBrightness(img, 1.3) }},
		{"contrast", func(*Ctx) { tvContrast(img, c, 0.7) }},
		{"saturation", func(*Ctx) { tvSaturation(img, c, 1.4) }},
		{"hue", func(*Ctx) { tvHue(img, c, 0.07) }},
		{"grayscale", func(*Ctx) { tvGrayscale(img, c) }},
	}
	for _, sigma := range []float64{0.1, 1, 2} {
		cases = append(cases, struct {
			name string
			f    func(cx *Ctx)
		}{fmt.Sprintf("blur23_sigma%v", sigma), func(cx *Ctx) { tvGaussianBlur(cx, img, h, w, c, 23, sigma) }})
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			cx := NewCtx()
			b.SetBytes(int64(len(img)))
			for i := 0; i < b.N; i++ {
				copy(img, src)
				tc.f(cx)
			}
		})
	}
}
