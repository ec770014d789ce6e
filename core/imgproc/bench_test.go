package imgproc

import (
	"math/rand/v2"
	"testing"
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
