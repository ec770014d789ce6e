package jpeg

import (
	"bytes"
	"image"
	"testing"
)

// TestDecodeTiming checks that a timed decode splits its time between the
// input copy, entropy decoding and the rest, for every path a decode can
// take (libjpeg's entropy decoder, a region stream with ours, a progressive
// file decoded whole in jpeg_start_decompress), that the pixels are those
// of an untimed decode, and that an untimed decode records nothing.
func TestDecodeTiming(t *testing.T) {
	const w, h = 640, 480
	src := gradient(w, h)
	cases := []struct {
		name   string
		opts   encodeOptions
		crop   image.Rectangle
		region bool
	}{
		{"baseline no markers", encodeOptions{subsample: true, restart: -1}, image.Rect(100, 80, 500, 400), false},
		{"region stream", encodeOptions{subsample: true}, image.Rect(100, 80, 500, 400), true},
		{"whole image", encodeOptions{subsample: true, restart: -1}, image.Rect(0, 0, w, h), false},
		{"whole image, markers", encodeOptions{subsample: true}, image.Rect(0, 0, w, h), true},
		{"progressive", encodeOptions{subsample: true, progressive: true}, image.Rect(100, 80, 500, 400), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := encodeT(t, src, w, h, 90, c.opts)
			d := NewDecoder()
			defer d.Close()
			want := make([]byte, 200*150*3)
			if err := d.DecodeCropResize(data, c.crop, 200, 150, want); err != nil {
				t.Fatal(err)
			}
			if d.LastTiming() != (Timing{}) {
				t.Fatalf("untimed decode recorded %+v", d.LastTiming())
			}
			d.SetTimed(true)
			got := make([]byte, len(want))
			var sum Timing
			for i := 0; i < 20; i++ { // sums: one decode may be below the clock's resolution
				if err := d.DecodeCropResize(data, c.crop, 200, 150, got); err != nil {
					t.Fatal(err)
				}
				tm := d.LastTiming()
				if tm.Entropy < 0 || tm.Entropy > tm.Decode || tm.Copy < 0 {
					t.Fatalf("decode %d: inconsistent %+v", i, tm)
				}
				sum.Copy += tm.Copy
				sum.Entropy += tm.Entropy
				sum.Decode += tm.Decode
			}
			if !bytes.Equal(got, want) {
				t.Fatal("a timed decode changed the pixels")
			}
			if d.regionCut() != c.region {
				t.Fatalf("region stream used: %v, want %v", d.regionCut(), c.region)
			}
			if sum.Entropy <= 0 || sum.Decode <= sum.Entropy {
				t.Fatalf("20 decodes: entropy %d ns of %d ns", sum.Entropy, sum.Decode)
			}
			d.SetTimed(false)
			if err := d.DecodeCropResize(data, c.crop, 200, 150, got); err != nil {
				t.Fatal(err)
			}
			if d.LastTiming() != (Timing{}) {
				t.Fatalf("decode after SetTimed(false) recorded %+v", d.LastTiming())
			}
		})
	}
}

// BenchmarkDecodeTimed is the cost of timing: the test photo's
// RandomResizedCrop-like decode untimed and timed, with the entropy share
// the timed one measures.
//
//	go test ./core/jpeg -run '^$' -bench DecodeTimed -cpu 1
func BenchmarkDecodeTimed(b *testing.B) {
	p := loadPhoto(b)
	d0 := NewDecoder()
	defer d0.Close()
	data, err := d0.Transcode(p.jpeg, 90, false) // restart markers, as a .beton holds it
	if err != nil {
		b.Fatal(err)
	}
	crop := image.Rect(40, 30, 360, 270)
	dst := make([]byte, 224*224*3)
	for _, timed := range []bool{false, true} {
		name := map[bool]string{false: "untimed", true: "timed"}[timed]
		b.Run(name, func(b *testing.B) {
			d := NewDecoder()
			defer d.Close()
			d.SetTimed(timed)
			var entropy, decode int64
			for i := 0; i < b.N; i++ {
				if err := d.DecodeCropResize(data, crop, 224, 224, dst); err != nil {
					b.Fatal(err)
				}
				entropy += d.LastTiming().Entropy
				decode += d.LastTiming().Decode
			}
			if timed && decode > 0 {
				b.ReportMetric(float64(entropy)/float64(decode), "entropy-share")
			}
		})
	}
}
