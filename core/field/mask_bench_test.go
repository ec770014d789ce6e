package field

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"github.com/pierrec/lz4/v4"
)

// segmentationMap is a 640x480 class map like a scene's: a few dozen
// blobs of a dozen classes over background, with ragged outlines.
func segmentationMap() []byte {
	const w, h = 640, 480
	m := make([]byte, w*h)
	for k := 0; k < 40; k++ {
		cx, cy, r := (k*97)%w, (k*61)%h, 20+(k*13)%70
		for y := max(0, cy-r); y < min(h, cy+r); y++ {
			for x := max(0, cx-r); x < min(w, cx+r); x++ {
				if (x-cx)*(x-cx)+(y-cy)*(y-cy)+((x*y)%37) < r*r {
					m[y*w+x] = byte(1 + k%12)
				}
			}
		}
	}
	return m
}

// BenchmarkMaskDecode compares the encodings a mask could be stored in:
// bytes stored (reported as "stored-bytes") and decode time per mask.
func BenchmarkMaskDecode(b *testing.B) {
	const w, h = 640, 480
	raw := segmentationMap()
	var c lz4.Compressor
	block := make([]byte, lz4.CompressBlockBound(len(raw)))
	n, _ := c.CompressBlock(raw, block)
	block = block[:n]
	img := &image.Gray{Pix: raw, Stride: w, Rect: image.Rect(0, 0, w, h)}
	var pngBuf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&pngBuf, img); err != nil {
		b.Fatal(err)
	}
	out := make([]byte, len(raw))
	for _, tc := range []struct {
		name   string
		stored int
		decode func() error
	}{
		{"raw", len(raw), func() error { copy(out, raw); return nil }},
		{"lz4", len(block), func() error { _, err := lz4.UncompressBlock(block, out); return err }},
		{"png", pngBuf.Len(), func() error { _, err := png.Decode(bytes.NewReader(pngBuf.Bytes())); return err }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportMetric(float64(tc.stored), "stored-bytes")
			b.SetBytes(int64(len(raw)))
			for i := 0; i < b.N; i++ {
				if err := tc.decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
