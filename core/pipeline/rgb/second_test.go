package rgb

import (
	"encoding/binary"
	"image"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/internal/testimg"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// NonOverlappingCrop samples inside the largest strip beside the other
// crop, the first of them (above, below, left, right) on ties, and takes
// the whole image only when the other crop covers it.
func TestNonOverlappingCrop(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	scale, ratio := [2]float64{0.08, 1}, [2]float64{0.75, 4.0 / 3}
	for _, tc := range []struct {
		w, h  int
		other image.Rectangle
		strip image.Rectangle
	}{
		{100, 80, image.Rect(0, 50, 100, 80), image.Rect(0, 0, 100, 50)},  // above
		{100, 80, image.Rect(0, 0, 100, 30), image.Rect(0, 30, 100, 80)},  // below
		{100, 80, image.Rect(60, 0, 100, 80), image.Rect(0, 0, 60, 80)},   // left
		{100, 80, image.Rect(10, 10, 30, 70), image.Rect(30, 0, 100, 80)}, // right
		{100, 80, image.Rect(40, 20, 60, 60), image.Rect(0, 0, 40, 80)},   // left and right tie: left (above 2000 < 3200)
		{100, 100, image.Rect(25, 25, 75, 75), image.Rect(0, 0, 100, 25)}, // all four tie: above
		{100, 80, image.Rect(0, 0, 100, 80), image.Rect(0, 0, 100, 80)},   // no strip: the whole image
		{100, 80, image.Rect(0, 1, 100, 80), image.Rect(0, 0, 100, 1)},    // a one-row strip
	} {
		for i := 0; i < 200; i++ {
			got := NonOverlappingCrop(r, tc.w, tc.h, tc.other, scale, ratio)
			if got.Empty() || !got.In(tc.strip) {
				t.Fatalf("%dx%d beside %v: %v is not in the strip %v", tc.w, tc.h, tc.other, got, tc.strip)
			}
			if tc.other != image.Rect(0, 0, tc.w, tc.h) && got.Overlaps(tc.other) {
				t.Fatalf("%v overlaps %v", got, tc.other)
			}
		}
	}
}

// TestSecondSeed: over many samples and image shapes, the crop rgb_rrc,
// rrc and label_rrc draw with second_seed never overlaps the crop the
// same decoder draws under that seed, unless that one is the whole image
// (and then it is the whole image too); label_rrc reports the decoder's
// crop and the rrc transform takes it.
func TestSecondSeed(t *testing.T) {
	for _, tc := range []struct {
		scale, ratio []float64
		sizes        [][2]int
		whole        bool // the first crop is always the whole image (sometimes, in the others)
	}{
		{[]float64{0.08, 1}, []float64{0.4, 1}, [][2]int{{64, 48}, {48, 64}, {200, 30}, {7, 5}}, false},
		{[]float64{0.5, 1}, []float64{0.75, 4.0 / 3}, [][2]int{{40, 40}, {3, 90}}, false},
		{[]float64{1, 1}, []float64{1, 1}, [][2]int{{16, 16}}, true},
	} {
		crop := map[string]any{"size": []int{16, 16}, "scale": tc.scale, "ratio": tc.ratio}
		with := func(kv ...any) map[string]any {
			m := map[string]any{}
			for k, v := range crop {
				m[k] = v
			}
			for i := 0; i < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		}
		first := newDecoder(t, "rgb_rrc", with("seed", 5)).(*cropRGB)
		second := newDecoder(t, "rgb_rrc", with("seed", 10, "second_seed", 5)).(*cropRGB)
		label := newDecoder(t, "label_rrc", with("seed", 10, "second_seed", 5))
		transform := optest.NewOp(t, "rrc", with("seed", 10, "second_seed", 5)).(*cropTransform)
		k1, k2 := pipeline.SeedKey(5), pipeline.SeedKey(10)
		for _, size := range tc.sizes {
			w, h := size[0], size[1]
			full := image.Rect(0, 0, w, h)
			for pos := uint64(0); pos < 2000; pos++ {
				c := pipeline.NewCtx()
				c.Seed, c.Pos = 3, pos
				a, b := first.rect(c, k1, w, h), second.rect(c, k2, w, h)
				switch {
				case b.Empty() || !b.In(full):
					t.Fatalf("%dx%d sample %d: crop %v", w, h, pos, b)
				case tc.whole && a != full:
					t.Fatalf("%dx%d sample %d: first crop %v", w, h, pos, a)
				case a == full && b != full:
					t.Fatalf("%dx%d sample %d: the first crop is the whole image, the second %v", w, h, pos, b)
				case a != full && b.Overlaps(a):
					t.Fatalf("%dx%d sample %d: %v overlaps %v", w, h, pos, b, a)
				}
				if got := transform.crop.rect(c, k2, w, h); got != b {
					t.Fatalf("rrc draws %v, rgb_rrc %v", got, b)
				}
				if pos >= 50 {
					continue
				}
				c.Col = rgbColumn(w, h)
				p := make([]byte, 24)
				if err := label.Run(c, k2, nil, p); err != nil {
					t.Fatal(err)
				}
				v := make([]int, 6)
				for i := range v {
					v[i] = int(int32(binary.LittleEndian.Uint32(p[4*i:])))
				}
				if got := image.Rect(v[3], v[2], v[3]+v[5], v[2]+v[4]); got != b || v[0] != w || v[1] != h {
					t.Fatalf("label_rrc reports %v, the decoder crops %v", v, b)
				}
			}
		}
	}
}

// rgbColumn is the metadata column of a raw w×h image.
func rgbColumn(w, h int) []byte {
	col := make([]byte, 13)
	col[field.RGBModeOff] = field.ModeRaw
	binary.LittleEndian.PutUint16(col[field.RGBWidthOff:], uint16(w))
	binary.LittleEndian.PutUint16(col[field.RGBHeightOff:], uint16(h))
	return col
}

// rgb_corner decodes the square corner_crop cuts from the decoded image
// (raw exactly; a JPEG closest to that square of all four), and rgb_pad
// each image whole at the top-left of the file's largest size.
func TestCornerAndPadDecoders(t *testing.T) {
	const w, h = 64, 48
	pix := testimg.PhotoLike(h, w, 3)
	enc, err := jpeg.Encode(pix, w, h, 95)
	if err != nil {
		t.Fatal(err)
	}
	_, _, col := testImage(t, w, h)
	corners := []string{"top_left", "top_right", "bottom_left", "bottom_right"}
	squares := map[string][]byte{}
	for _, corner := range corners {
		sq := SquareCrop(w, h, 0.5, corner)
		want := make([]byte, 12*12*3)
		new(imgproc.Resizer).ResizeArea(want, 12, 12, imgproc.SubRect(pix, w*3, 3, sq), sq.Dx(), sq.Dy(), w*3, 3)
		squares[corner] = want
	}
	for _, corner := range corners {
		args := map[string]any{"size": []int{12, 12}, "ratio": 0.5, "corner": corner}
		want := squares[corner]
		_, fromTransform := optest.Apply(t, optest.NewOp(t, "corner_crop", args), optest.ImgSpec(h, w, 3), pix, 1, 0)
		if !slices.Equal(fromTransform, want) {
			t.Fatalf("%s: corner_crop is not the square %v", corner, SquareCrop(w, h, 0.5, corner))
		}
		dec := newDecoder(t, "rgb_corner", args)
		for _, mode := range []byte{field.ModeRaw, field.ModeJPEG} {
			c := pipeline.NewCtx()
			c.Col, c.Heap = col(mode), pix
			if mode == field.ModeJPEG {
				c.Heap = enc
			}
			got := make([]byte, len(want))
			if err := dec.Run(c, 0, nil, got); err != nil {
				t.Fatal(err)
			}
			if mode == field.ModeRaw && !slices.Equal(got, want) {
				t.Fatalf("%s: raw rgb_corner is not the square", corner)
			}
			for _, other := range corners {
				if other != corner && meanAbsDiff(got, squares[other]) <= meanAbsDiff(got, want) {
					t.Fatalf("%s mode %d: the decoded square is closer to %s's", corner, mode, other)
				}
			}
		}
	}

	// rgb_pad on optest's file (8x6 images): the output is 8x6 and the raw
	// image lands at the top-left; a smaller image is zero-padded.
	r := optest.Reader(t)
	pad := optest.Build(t, r, optest.ImageField, optest.Named{Name: "rgb_pad"})
	if !slices.Equal(pad.Out.Shape, []int{6, 8, 3}) {
		t.Fatalf("rgb_pad output %v", pad.Out)
	}
	small := testimg.PhotoLike(4, 5, 3)
	c := pipeline.NewCtx()
	c.Col, c.Heap = rgbColumn(5, 4), small
	out := make([]byte, 6*8*3)
	for i := range out {
		out[i] = 99
	}
	var s pipeline.Scratch
	if err := pad.Run(c, &s, nil, out); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, len(out))
	imgproc.PadTopLeft(want, 8, 6, small, 5*3, 5, 4, 3)
	if !slices.Equal(out, want) {
		t.Fatal("rgb_pad: not the image at the top-left, zeros elsewhere")
	}
	c.Col, c.Heap = rgbColumn(9, 4), make([]byte, 9*4*3)
	if err := pad.Run(c, &s, nil, out); err == nil {
		t.Fatal("rgb_pad took an image wider than the file's widest")
	}
}

func meanAbsDiff(a, b []byte) float64 {
	var d float64
	for i := range a {
		d += math.Abs(float64(a[i]) - float64(b[i]))
	}
	return d / float64(len(a))
}

// TestFirstCropRarelyWhole measures what the views guide says: the first
// crop covers the whole image, leaving no strip, in far fewer than 1 in
// 5,000 samples (only when all 10 tries fail and the centred fallback is
// the whole image), and the second crop is smaller than the first on
// average.
func TestFirstCropRarelyWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	scale := [2]float64{0.08, 1}
	for _, ratio := range [][2]float64{{0.4, 1}, {0.75, 4.0 / 3}} {
		for _, sz := range [][2]int{{256, 256}, {500, 375}, {375, 500}} {
			const n = 100000
			whole := 0
			var first, second float64
			for i := 0; i < n; i++ {
				a := RandomResizedCrop(r, sz[0], sz[1], scale, ratio)
				b := NonOverlappingCrop(r, sz[0], sz[1], a, scale, ratio)
				if a == image.Rect(0, 0, sz[0], sz[1]) {
					whole++
				}
				first += float64(a.Dx() * a.Dy())
				second += float64(b.Dx() * b.Dy())
			}
			if whole > n/5000 || second >= 0.7*first {
				t.Errorf("ratio %v, %v image: the first crop is whole in %d of %d, mean areas %.0f then %.0f",
					ratio, sz, whole, n, first/n, second/n)
			}
		}
	}
}
