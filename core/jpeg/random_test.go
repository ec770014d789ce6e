package jpeg

import (
	"image"
	"math/rand/v2"
	"testing"
)

// randomCrop draws a crop of an w×h image and an output size the way a
// RandomResizedCrop pipeline would, including extreme aspect ratios and
// crops touching the image border.
func randomCrop(r *rand.Rand, w, h int) cropCase {
	cw, ch := 1+r.IntN(w), 1+r.IntN(h)
	x, y := r.IntN(w-cw+1), r.IntN(h-ch+1)
	switch r.IntN(4) {
	case 0:
		x = w - cw // touch the right edge
	case 1:
		y = h - ch // touch the bottom
	}
	ow, oh := 1+r.IntN(128), 1+r.IntN(128)
	if r.IntN(2) == 0 {
		ow, oh = 1+r.IntN(max(cw/8, 1)), 1+r.IntN(max(ch/8, 1)) // DCT scaling
	}
	return cropCase{image.Rect(x, y, x+cw, y+ch), ow, oh}
}

// TestDecodeCropResizeRandom runs many random crops over files with
// different layouts (4:2:0, 4:2:2, 4:4:0, 4:1:1, 4:4:4, gray, progressive;
// sizes that are not
// multiples of the MCU): crops decoded at full scale must equal the
// reference exactly, scaled ones must stay within the gradient bounds of
// TestDecodeCropResizeScaled, loosened (mean < 1, max <= 6) for crops of a
// few pixels (4:1:1 excepted, see below).
func TestDecodeCropResizeRandom(t *testing.T) {
	const w, h = 397, 293
	src := gradient(w, h)
	gray := make([]byte, w*h)
	for i := range gray {
		gray[i] = src[3*i+2]
	}
	files := []struct {
		name    string
		jpeg    []byte
		maxMean float64
		maxDiff int
	}{
		{"420", encodeT(t, src, w, h, 95, encodeOptions{subsample: true}), 1, 6},
		{"422", encodeT(t, src, w, h, 95, encodeOptions{hs: 2, vs: 1}), 1, 6},
		{"440", encodeT(t, src, w, h, 95, encodeOptions{hs: 1, vs: 2}), 1, 6},
		// libjpeg box-upsamples 4:1:1 chroma at every scale, so after DCT
		// scaling one chroma sample spans 32/m pixels instead of 4.
		{"411", encodeT(t, src, w, h, 95, encodeOptions{hs: 4, vs: 1}), 3, 16},
		{"444", encodeT(t, src, w, h, 95, encodeOptions{}), 1, 6},
		{"gray", encodeT(t, gray, w, h, 95, encodeOptions{gray: true}), 1, 6},
		{"progressive", encodeT(t, src, w, h, 95, encodeOptions{subsample: true, progressive: true}), 1, 6},
	}
	n := 150
	if testing.Short() {
		n = 30
	}
	d := NewDecoder()
	defer d.Close()
	for _, f := range files {
		rng := rand.New(rand.NewPCG(7, 8))
		full := make([]byte, w*h*3)
		if _, _, err := d.Decode(f.jpeg, full); err != nil {
			t.Fatal(err)
		}
		var worstMean float64
		var worstMax int
		for i := 0; i < n; i++ {
			c := randomCrop(rng, w, h)
			got := make([]byte, c.ow*c.oh*3)
			if err := d.DecodeCropResize(f.jpeg, c.r, c.ow, c.oh, got); err != nil {
				t.Fatalf("%s %v: %v", f.name, c, err)
			}
			want := reference(full, w, c.r, c.ow, c.oh)
			mean, mx := stats(got, want)
			if chooseScale(c.r.Dx(), c.r.Dy(), c.ow, c.oh) == 8 {
				if mx != 0 {
					t.Errorf("%s %v at 8/8: mean %.3f, max %d; want identical", f.name, c, mean, mx)
				}
				continue
			}
			worstMean, worstMax = max(worstMean, mean), max(worstMax, mx)
			if mean >= f.maxMean || mx > f.maxDiff {
				t.Errorf("%s %v at %d/8: mean %.3f, max %d", f.name, c, chooseScale(c.r.Dx(), c.r.Dy(), c.ow, c.oh), mean, mx)
			}
		}
		t.Logf("%s: scaled crops: worst mean %.3f, worst max %d", f.name, worstMean, worstMax)
	}
}
