package jpeg

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"sort"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
)

func TestChooseScale(t *testing.T) {
	for _, tt := range []struct {
		cw, ch, ow, oh, want int
	}{
		{400, 300, 224, 224, 8}, // upscale in y
		{447, 447, 224, 224, 8}, // 1/2 would give 223.5 < 224
		{448, 448, 224, 224, 4}, // exactly covers at 1/2
		{597, 597, 224, 224, 4}, // 3/8 would give 223.875
		{598, 598, 224, 224, 3},
		{895, 895, 224, 224, 3},
		{896, 896, 224, 224, 2},
		{1792, 1792, 224, 224, 1},
		{5000, 5000, 224, 224, 1}, // 1/8 is the coarsest
		{1792, 400, 224, 224, 8},  // one short axis decides
		{1792, 448, 224, 224, 4},
		{100, 100, 10, 10, 1},
		{1, 1, 1, 1, 8},
		{8, 8, 1, 1, 1},
		{7, 8, 1, 1, 2},
		{3, 3, 5, 5, 8},
	} {
		if got := chooseScale(tt.cw, tt.ch, tt.ow, tt.oh); got != tt.want {
			t.Errorf("chooseScale(%d, %d, %d, %d) = %d/8, want %d/8", tt.cw, tt.ch, tt.ow, tt.oh, got, tt.want)
		}
	}
}

// reference is what DecodeCropResize promises to approximate: decode
// everything, crop, then resize like cv2.resize INTER_AREA.
func reference(full []byte, w int, crop image.Rectangle, ow, oh int) []byte {
	out := make([]byte, ow*oh*3)
	imgproc.ResizeArea(out, ow, oh, imgproc.SubRect(full, w*3, 3, crop), crop.Dx(), crop.Dy(), w*3, 3)
	return out
}

// percentile returns the p-th percentile of |a-b|.
func percentile(a, b []byte, p float64) int {
	d := make([]int, len(a))
	for i := range a {
		d[i] = max(int(a[i])-int(b[i]), int(b[i])-int(a[i]))
	}
	sort.Ints(d)
	return d[int(p*float64(len(d)-1))]
}

type cropCase struct {
	r      image.Rectangle
	ow, oh int
}

func (c cropCase) String() string {
	return fmt.Sprintf("%v->%dx%d", c.r, c.ow, c.oh)
}

// Without DCT scaling, DecodeCropResize must reproduce the reference bit for
// bit: the partial decode (iMCU-aligned columns plus a margin column, skipped
// rows, early stop) returns the same pixels as the full decode.
func TestDecodeCropResizeExact(t *testing.T) {
	p := loadPhoto(t)
	d := NewDecoder()
	defer d.Close()
	for _, c := range []cropCase{
		{image.Rect(0, 0, 400, 300), 400, 300},     // identity
		{image.Rect(0, 0, 400, 300), 224, 224},     // whole image, mixed up/down
		{image.Rect(0, 0, 400, 300), 250, 199},     // whole image, fractional down
		{image.Rect(200, 150, 400, 300), 224, 224}, // bottom-right corner, upscale
		{image.Rect(0, 150, 137, 300), 100, 100},   // bottom-left corner
		{image.Rect(263, 0, 400, 97), 120, 64},     // top-right corner
		{image.Rect(96, 96, 304, 208), 208, 112},   // iMCU-aligned edges
		{image.Rect(100, 100, 300, 200), 150, 50},  // chroma-pair-aligned right edge
		{image.Rect(97, 97, 200, 207), 103, 55},    // integer 1x2 fast path
		{image.Rect(57, 33, 60, 38), 224, 224},     // tiny crop, big upscale
		{image.Rect(57, 33, 58, 34), 4, 4},         // single pixel
		{image.Rect(399, 299, 400, 300), 1, 1},     // last pixel
		{image.Rect(0, 0, 1, 300), 1, 10},          // one column
		{image.Rect(10, 150, 390, 151), 40, 1},     // one row
	} {
		if m := chooseScale(c.r.Dx(), c.r.Dy(), c.ow, c.oh); m != 8 {
			t.Fatalf("%v: test case uses scale %d/8", c, m)
		}
		got := make([]byte, c.ow*c.oh*3)
		if err := d.DecodeCropResize(p.jpeg, c.r, c.ow, c.oh, got); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		want := reference(p.pix, p.w, c.r, c.ow, c.oh)
		if mean, mx := stats(got, want); mx != 0 {
			t.Errorf("%v: mean diff %.3f, max %d; want identical", c, mean, mx)
		}
	}
}

// With DCT scaling libjpeg shrinks by truncating high frequencies, a sharper
// filter than the box filter of INTER_AREA, so the result differs from the
// reference where the image has detail. Bounds (measured, plus slack):
//
//   - smooth gradient, any scale: mean < 0.7, 99th percentile <= 2, max <= 4.
//     This pins the geometry: misplacing the crop by a fraction of a scaled
//     pixel shows up here.
//   - detailed photo at 1/2 and 1/4: mean < 2, p99 <= 16.
//   - detailed photo at 1/8: mean < 5, p99 <= 32. At 1/8 libjpeg-turbo
//     turns off fancy upsampling, so 4:2:0 chroma is one flat value per
//     16x16 block; thin crops (a few scaled pixels wide) suffer most.
//   - single pixels on sharp edges differ by up to ~40 at any scale, so the
//     photo's max is only a sanity bound (64).
func TestDecodeCropResizeScaled(t *testing.T) {
	const gw, gh = 400, 300
	grad := encodeT(t, gradient(gw, gh), gw, gh, 95, encodeOptions{subsample: true})
	d := NewDecoder()
	defer d.Close()
	gradPix := make([]byte, gw*gh*3)
	if _, _, err := d.Decode(grad, gradPix); err != nil {
		t.Fatal(err)
	}
	type bound struct {
		mean     float64
		p99, max int
	}
	type testImage struct {
		name      string
		jpeg, pix []byte
		w         int
		bounds    func(scale int) bound
	}
	imgs := []testImage{{"gradient", grad, gradPix, gw, func(int) bound { return bound{0.7, 2, 4} }}}
	if p, ok := tryPhoto(); ok {
		imgs = append(imgs, testImage{"photo", p.jpeg, p.pix, p.w, func(scale int) bound {
			if scale == 1 {
				return bound{5, 32, 64}
			}
			return bound{2, 16, 64}
		}})
	} else {
		t.Log("no photo installed; testing the gradient only")
	}
	cases := []struct {
		cropCase
		scale int
	}{
		{cropCase{image.Rect(0, 0, 400, 300), 200, 150}, 4},
		{cropCase{image.Rect(0, 0, 400, 300), 100, 75}, 2},
		{cropCase{image.Rect(0, 0, 400, 300), 50, 37}, 1},
		{cropCase{image.Rect(13, 7, 391, 297), 180, 140}, 4},
		{cropCase{image.Rect(0, 0, 400, 300), 140, 100}, 3},
		{cropCase{image.Rect(13, 7, 391, 297), 130, 100}, 3},
		{cropCase{image.Rect(13, 7, 391, 297), 90, 70}, 2},
		{cropCase{image.Rect(13, 7, 391, 297), 40, 30}, 1},
		{cropCase{image.Rect(201, 151, 400, 300), 99, 74}, 4}, // bottom-right edge
		{cropCase{image.Rect(0, 0, 123, 77), 15, 9}, 1},       // top-left edge
		{cropCase{image.Rect(17, 9, 217, 209), 100, 100}, 4},
		{cropCase{image.Rect(17, 9, 217, 209), 25, 25}, 1},
		{cropCase{image.Rect(300, 3, 317, 299), 2, 37}, 1}, // thin
		{cropCase{image.Rect(5, 5, 13, 13), 1, 1}, 1},      // one 8x8 cell
	}
	for _, img := range imgs {
		for _, c := range cases {
			if m := chooseScale(c.r.Dx(), c.r.Dy(), c.ow, c.oh); m != c.scale {
				t.Fatalf("%v: scale %d/8, test expects %d/8", c, m, c.scale)
			}
			got := make([]byte, c.ow*c.oh*3)
			if err := d.DecodeCropResize(img.jpeg, c.r, c.ow, c.oh, got); err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			want := reference(img.pix, img.w, c.r, c.ow, c.oh)
			mean, mx := stats(got, want)
			p99 := percentile(got, want, 0.99)
			t.Logf("%s %v at %d/8: mean %.3f, p99 %d, max %d", img.name, c, c.scale, mean, p99, mx)
			if b := img.bounds(c.scale); mean >= b.mean || p99 > b.p99 || mx > b.max {
				t.Errorf("%s %v: mean %.3f, p99 %d, max %d; want < %.1f, <= %d, <= %d",
					img.name, c, mean, p99, mx, b.mean, b.p99, b.max)
			}
		}
	}
}

// Progressive files take a different path inside libjpeg (whole-image
// coefficient buffer); cropping, skipping and scaling must work there too.
func TestDecodeCropResizeProgressive(t *testing.T) {
	const w, h = 400, 300
	src := gradient(w, h)
	base := encodeT(t, src, w, h, 92, encodeOptions{subsample: true})
	prog := encodeT(t, src, w, h, 92, encodeOptions{subsample: true, progressive: true})
	d := NewDecoder()
	defer d.Close()
	for _, c := range []cropCase{
		{image.Rect(33, 21, 250, 180), 100, 80},  // 1/2
		{image.Rect(33, 21, 250, 180), 200, 150}, // 1/1
		{image.Rect(0, 0, 400, 300), 40, 30},     // 1/8
	} {
		a := make([]byte, c.ow*c.oh*3)
		b := make([]byte, len(a))
		if err := d.DecodeCropResize(base, c.r, c.ow, c.oh, a); err != nil {
			t.Fatal(err)
		}
		if err := d.DecodeCropResize(prog, c.r, c.ow, c.oh, b); err != nil {
			t.Fatal(err)
		}
		// Same coefficients, different entropy coding: identical pixels.
		if mean, mx := stats(a, b); mx != 0 {
			t.Errorf("%v: progressive differs from baseline: mean %.3f, max %d", c, mean, mx)
		}
	}
}

func TestDecodeCropResizeErrors(t *testing.T) {
	enc := encodeT(t, gradient(40, 30), 40, 30, 90, encodeOptions{subsample: true})
	d := NewDecoder()
	defer d.Close()
	dst := make([]byte, 10*10*3)
	for _, tt := range []struct {
		name   string
		r      image.Rectangle
		ow, oh int
		dst    []byte
		want   string
	}{
		{"right of image", image.Rect(30, 0, 41, 30), 10, 10, dst, "not inside"},
		{"below image", image.Rect(0, 25, 10, 31), 10, 10, dst, "not inside"},
		{"negative", image.Rect(-1, 0, 10, 10), 10, 10, dst, "bad crop"},
		{"empty", image.Rect(5, 5, 5, 10), 10, 10, dst, "bad crop"},
		{"huge", image.Rect(0, 0, 1<<40, 10), 10, 10, dst, "bad crop"},
		{"huge output", image.Rect(0, 0, 10, 10), 1 << 40, 1, dst, "bad output size"},
		{"zero output", image.Rect(0, 0, 10, 10), 0, 10, dst, "bad output size"},
		{"short dst", image.Rect(0, 0, 10, 10), 10, 10, dst[:299], "too small"},
	} {
		err := d.DecodeCropResize(enc, tt.r, tt.ow, tt.oh, tt.dst)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tt.name, err, tt.want)
		}
		if tt.name == "short dst" && !errors.Is(err, ErrShortBuffer) {
			t.Errorf("short dst: %v does not wrap ErrShortBuffer", err)
		}
	}
	// Still usable after all those errors.
	if err := d.DecodeCropResize(enc, image.Rect(0, 0, 40, 30), 10, 10, dst); err != nil {
		t.Fatal(err)
	}
}

// At 1/8 libjpeg would replicate 4:2:2 and 4:4:0 chroma over 16-pixel
// blocks, so the C side decodes those at 1/4 instead; 4:2:0, 4:4:4 and gray
// stay at 1/8.
func TestScaleRefinedBySubsampling(t *testing.T) {
	const w, h = 320, 240
	src := gradient(w, h)
	d := NewDecoder()
	defer d.Close()
	for _, tt := range []struct {
		name string
		o    encodeOptions
		want int
	}{
		{"420", encodeOptions{subsample: true}, 1},
		{"444", encodeOptions{}, 1},
		{"gray", encodeOptions{gray: true}, 1},
		{"422", encodeOptions{hs: 2, vs: 1}, 2},
		{"440", encodeOptions{hs: 1, vs: 2}, 2},
	} {
		pix := src
		if tt.o.gray {
			pix = src[:w*h]
		}
		enc := encodeT(t, pix, w, h, 90, tt.o)
		if err := d.DecodeCropResize(enc, image.Rect(0, 0, w, h), 40, 30, make([]byte, 40*30*3)); err != nil {
			t.Fatal(err)
		}
		if got := int(d.g.scale_num); got != tt.want {
			t.Errorf("%s: decoded at %d/8, want %d/8", tt.name, got, tt.want)
		}
	}
}

// The flipped decode is exactly the mirror of the plain one at every scale
// and on the upscaling path.
func TestDecodeCropResizeFlip(t *testing.T) {
	const w, h = 400, 300
	src := gradient(w, h)
	for i := range src {
		src[i] ^= byte(i * 7) // texture, so a wrong mirror shows
	}
	enc := encodeT(t, src, w, h, 90, encodeOptions{subsample: true})
	d := NewDecoder()
	defer d.Close()
	for _, c := range []cropCase{
		{image.Rect(0, 0, 400, 300), 224, 224},   // grow in y
		{image.Rect(10, 20, 390, 290), 150, 120}, // 1/1, shrink
		{image.Rect(10, 20, 390, 290), 130, 100}, // 3/8
		{image.Rect(10, 20, 390, 290), 90, 60},   // 1/4
		{image.Rect(50, 50, 90, 70), 224, 224},   // big upscale
		{image.Rect(5, 5, 229, 229), 224, 224},   // 1:1
	} {
		plain := make([]byte, c.ow*c.oh*3)
		flipped := make([]byte, len(plain))
		if err := d.DecodeCropResize(enc, c.r, c.ow, c.oh, plain); err != nil {
			t.Fatal(err)
		}
		if err := d.DecodeCropResizeFlip(enc, c.r, c.ow, c.oh, flipped, true); err != nil {
			t.Fatal(err)
		}
		for y := 0; y < c.oh; y++ {
			for x := 0; x < c.ow; x++ {
				p := plain[(y*c.ow+x)*3 : (y*c.ow+x)*3+3]
				q := flipped[(y*c.ow+c.ow-1-x)*3 : (y*c.ow+c.ow-1-x)*3+3]
				if string(p) != string(q) {
					t.Fatalf("%v: pixel (%d,%d) %v, mirrored %v", c, x, y, p, q)
				}
			}
		}
	}
}

// DecodeCropInto writes a crop at its own size into a larger buffer, rows a
// stride apart, with the full decode's pixels, and touches nothing around it.
func TestDecodeCropInto(t *testing.T) {
	p := loadPhoto(t)
	d := NewDecoder()
	defer d.Close()
	const pad = 5 // pixels left of and after each row in the destination
	for _, r := range []image.Rectangle{
		image.Rect(0, 0, 400, 300),     // whole
		image.Rect(200, 150, 400, 300), // bottom-right corner
		image.Rect(97, 33, 204, 171),   // odd edges, inside
		image.Rect(96, 96, 304, 208),   // iMCU-aligned
		image.Rect(399, 0, 400, 300),   // last column
		image.Rect(0, 299, 400, 300),   // last row
	} {
		w, h := r.Dx(), r.Dy()
		stride := (w + 2*pad) * 3
		dst := make([]byte, h*stride)
		for i := range dst {
			dst[i] = 0xA5
		}
		if err := d.DecodeCropInto(p.jpeg, r, dst[pad*3:], stride); err != nil {
			t.Fatalf("%v: %v", r, err)
		}
		want := reference(p.pix, p.w, r, w, h)
		for y := 0; y < h; y++ {
			row := dst[y*stride : (y+1)*stride]
			if got := row[pad*3 : (pad+w)*3]; !bytes.Equal(got, want[y*w*3:(y+1)*w*3]) {
				t.Fatalf("%v: row %d differs from the full decode", r, y)
			}
			for i, b := range append(row[:pad*3:pad*3], row[(pad+w)*3:]...) {
				if b != 0xA5 {
					t.Fatalf("%v: row %d: byte %d beside the crop written", r, y, i)
				}
			}
		}
	}
	for _, c := range []struct {
		r      image.Rectangle
		n, str int
		want   string
	}{
		{image.Rect(0, 0, 10, 10), 10 * 10 * 3, 29, "stride"},
		{image.Rect(0, 0, 10, 10), 9*40 + 29, 40, "need"},
		{image.Rect(0, 0, 0, 10), 100, 30, "bad crop"},
		{image.Rect(-1, 0, 10, 10), 1000, 33, "bad crop"},
	} {
		err := d.DecodeCropInto(p.jpeg, c.r, make([]byte, c.n), c.str)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, %d bytes, stride %d: error %v, want one saying %q", c.r, c.n, c.str, err, c.want)
		}
	}
}
