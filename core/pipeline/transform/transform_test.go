package transform

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// Each transform is run on small synthetic images and compared with a
// straightforward reference computed here.

// uniqueImage has a different, non-zero value at every (y, x, channel), so a
// moved pixel can be recognised (h*w*c must stay below 255).
func uniqueImage(h, w, c int) []byte {
	b := make([]byte, h*w*c)
	for i := range b {
		b[i] = byte(1 + i)
	}
	return b
}

// rampImage covers the whole uint8 range, repeatedly.
func rampImage(h, w, c int) []byte {
	b := make([]byte, h*w*c)
	for i := range b {
		b[i] = byte(i * 37)
	}
	return b
}

func flippedH(in []byte, h, w, c int) []byte {
	out := make([]byte, len(in))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			copy(out[(y*w+x)*c:(y*w+x+1)*c], in[(y*w+w-1-x)*c:(y*w+w-x)*c])
		}
	}
	return out
}

func flippedV(in []byte, h, w, c int) []byte {
	out := make([]byte, len(in))
	for y := 0; y < h; y++ {
		copy(out[y*w*c:(y+1)*w*c], in[(h-1-y)*w*c:(h-y)*w*c])
	}
	return out
}

func TestFlip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h, w, c int
		p       float64
		want    func(in []byte, h, w, c int) []byte
	}{
		{"flip_h", 5, 7, 3, 1, flippedH},
		{"flip_h", 4, 6, 1, 1, flippedH},
		{"flip_h", 3, 1, 3, 1, flippedH},
		{"flip_h", 5, 7, 3, 0, func(in []byte, _, _, _ int) []byte { return in }},
		{"flip_v", 5, 7, 3, 1, flippedV},
		{"flip_v", 6, 4, 3, 1, flippedV},
		{"flip_v", 1, 5, 3, 1, flippedV},
		{"flip_v", 5, 7, 3, 0, func(in []byte, _, _, _ int) []byte { return in }},
	} {
		t.Run(fmt.Sprintf("%s_%dx%dx%d_p%v", tc.name, tc.h, tc.w, tc.c, tc.p), func(t *testing.T) {
			in := uniqueImage(tc.h, tc.w, tc.c)
			want := tc.want(in, tc.h, tc.w, tc.c)
			for pos := uint64(0); pos < 20; pos++ {
				_, got := optest.Apply(t, optest.NewOp(t, tc.name, map[string]any{"p": tc.p}), optest.ImgSpec(tc.h, tc.w, tc.c), in, 7, pos)
				if !slices.Equal(got, want) {
					t.Fatalf("sample %d: got %v, want %v", pos, got, want)
				}
			}
		})
	}
}

// TestFlipInPlace runs the flip with the same buffer as input and output, as
// a fused program does.
func TestFlipInPlace(t *testing.T) {
	in := uniqueImage(5, 7, 3)
	buf := slices.Clone(in)
	op := optest.NewOp(t, "flip_h", map[string]any{"p": 1.0})
	op.Out(optest.ImgSpec(5, 7, 3))
	if err := op.Run(pipeline.NewCtx(), 0, buf, buf); err != nil {
		t.Fatal(err)
	}
	if want := flippedH(in, 5, 7, 3); !slices.Equal(buf, want) {
		t.Fatalf("in place: got %v, want %v", buf, want)
	}
}

func TestFlipHalfTheTime(t *testing.T) {
	in := uniqueImage(3, 4, 3)
	flipped := 0
	const n = 2000
	for pos := uint64(0); pos < n; pos++ {
		_, got := optest.Apply(t, optest.NewOp(t, "flip_h", map[string]any{"p": 0.5}), optest.ImgSpec(3, 4, 3), in, 1, pos)
		switch {
		case slices.Equal(got, in):
		case slices.Equal(got, flippedH(in, 3, 4, 3)):
			flipped++
		default:
			t.Fatalf("sample %d: neither the image nor its mirror", pos)
		}
	}
	if flipped < n*4/10 || flipped > n*6/10 {
		t.Fatalf("p=0.5 flipped %d of %d", flipped, n)
	}
}

func TestTranslate(t *testing.T) {
	const h, w, c = 5, 7, 3
	in := uniqueImage(h, w, c)
	for _, tc := range []struct {
		padding int
		fill    []int
	}{{0, []int{0, 0, 0}}, {1, []int{0, 0, 0}}, {2, []int{250, 251, 252}}, {4, []int{0, 0, 0}}, {9, []int{0, 0, 0}}} {
		t.Run(fmt.Sprintf("padding%d", tc.padding), func(t *testing.T) {
			fill := pipeline.FillBytes(tc.fill)
			seen := map[[2]int]bool{}
			for pos := uint64(0); pos < 400; pos++ {
				op := optest.NewOp(t, "translate", map[string]any{"padding": tc.padding, "fill": tc.fill})
				_, got := optest.Apply(t, op, optest.ImgSpec(h, w, c), in, 3, pos)
				found := false
				for dy := -tc.padding; dy <= tc.padding && !found; dy++ {
					for dx := -tc.padding; dx <= tc.padding && !found; dx++ {
						if slices.Equal(got, optest.Shifted(in, h, w, c, dy, dx, fill)) {
							found = true
							seen[[2]int{dy, dx}] = true
						}
					}
				}
				if !found {
					t.Fatalf("sample %d: output is no shift by up to %d pixels: %v", pos, tc.padding, got)
				}
				if tc.padding == 0 && !slices.Equal(got, in) {
					t.Fatalf("padding 0 is not the identity")
				}
			}
			if n := (2*tc.padding + 1) * (2*tc.padding + 1); tc.padding <= 2 && len(seen) != n {
				t.Fatalf("saw %d of the %d shifts", len(seen), n)
			}
		})
	}
}

func TestCutout(t *testing.T) {
	const h, w, c = 6, 8, 3
	in := uniqueImage(h, w, c)
	for _, size := range []int{1, 3, 6} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			corners := map[[2]int]bool{}
			for pos := uint64(0); pos < 300; pos++ {
				_, got := optest.Apply(t, optest.NewOp(t, "cutout", map[string]any{"size": size, "fill": []int{0, 0, 0}}), optest.ImgSpec(h, w, c), in, 5, pos)
				// The filled pixels must form one size×size square inside the image.
				y0, x0, y1, x1, n := h, w, -1, -1, 0
				for y := 0; y < h; y++ {
					for x := 0; x < w; x++ {
						px := got[(y*w+x)*c : (y*w+x+1)*c]
						if slices.Equal(px, []byte{0, 0, 0}) {
							n++
							y0, x0, y1, x1 = min(y0, y), min(x0, x), max(y1, y), max(x1, x)
						} else if !slices.Equal(px, in[(y*w+x)*c:(y*w+x+1)*c]) {
							t.Fatalf("sample %d: pixel (%d, %d) changed to %v outside the cutout", pos, y, x, px)
						}
					}
				}
				if n != size*size || y1-y0+1 != size || x1-x0+1 != size {
					t.Fatalf("sample %d: %d filled pixels in [%d..%d]x[%d..%d], want a %dx%d square", pos, n, y0, y1, x0, x1, size, size)
				}
				corners[[2]int{y0, x0}] = true
			}
			if want := (h - size + 1) * (w - size + 1); len(corners) != want {
				t.Fatalf("saw %d of the %d square positions", len(corners), want)
			}
		})
	}
	if _, err := optest.NewOp(t, "cutout", map[string]any{"size": 9, "fill": []int{0, 0, 0}}).Out(optest.ImgSpec(h, w, c)); err == nil {
		t.Fatal("a cutout larger than the image was accepted")
	}
}

// blendRef is FFCV's colour jitter: with probability p, blend the image with
// black / its mean luma / its luma by f ~ U(max(0, 1-m), 1+m), clip, truncate.
func blendRef(kind string, in []byte, m, p float64, seed, pos uint64) []byte {
	c := pipeline.NewCtx()
	c.Seed, c.Pos = seed, pos
	r := c.Rand(0)
	out := slices.Clone(in)
	if r.Float64() >= p {
		return out
	}
	lo := math.Max(0, 1-m)
	f := lo + float64(r.Float64()*(1+m-lo))
	clip := func(v float64) byte { return byte(math.Min(255, math.Max(0, v))) }
	luma := func(i int) float64 {
		// FFCV's grey: (0.2989 r + 0.587 g + 0.114 b).astype(uint8).
		return math.Trunc(float64(0.2989*float64(in[i])) + float64(0.587*float64(in[i+1])) + float64(0.114*float64(in[i+2])))
	}
	switch kind {
	case "brightness":
		for i, v := range in {
			out[i] = clip(float64(v) * f)
		}
	case "contrast":
		mean := 0.0
		for i := 0; i < len(in); i += 3 {
			mean += luma(i)
		}
		mean /= float64(len(in) / 3)
		for i, v := range in {
			out[i] = clip(float64(f*float64(v)) + float64((1-f)*mean))
		}
	case "saturation":
		for i := 0; i < len(in); i += 3 {
			g := luma(i)
			for k := 0; k < 3; k++ {
				out[i+k] = clip(float64(f*float64(in[i+k])) + float64((1-f)*g))
			}
		}
	}
	return out
}

func TestColourJitter(t *testing.T) {
	const h, w, c = 6, 9, 3
	in := rampImage(h, w, c)
	for _, kind := range []string{"brightness", "contrast", "saturation"} {
		for _, tc := range []struct{ m, p float64 }{{0, 1}, {0.4, 1}, {3, 1}, {0.9, 0.5}, {0.9, 0}} {
			t.Run(fmt.Sprintf("%s_m%v_p%v", kind, tc.m, tc.p), func(t *testing.T) {
				saturated := false
				for pos := uint64(0); pos < 50; pos++ {
					op := optest.NewOp(t, kind, map[string]any{"magnitude": tc.m, "p": tc.p})
					_, got := optest.Apply(t, op, optest.ImgSpec(h, w, c), in, 11, pos)
					if tc.m == 0 || tc.p == 0 {
						if !slices.Equal(got, in) {
							t.Fatalf("sample %d: magnitude %v, p %v is not the identity", pos, tc.m, tc.p)
						}
						continue
					}
					want := blendRef(kind, in, tc.m, tc.p, 11, pos)
					if !slices.Equal(got, want) {
						t.Fatalf("sample %d: got %v, want %v", pos, got, want)
					}
					saturated = saturated || slices.Contains(got, 255) && !slices.Equal(got, in)
				}
				if tc.m >= 3 && !saturated {
					t.Fatal("a magnitude of 3 never clipped at 255")
				}
			})
		}
	}
}

// TestBrightnessClips checks clipping on its own: a factor above 1 must
// saturate bright pixels at 255, never wrap around.
func TestBrightnessClips(t *testing.T) {
	in := []byte{0, 1, 100, 128, 200, 254, 255, 255, 255}
	for pos := uint64(0); pos < 100; pos++ {
		_, got := optest.Apply(t, optest.NewOp(t, "brightness", map[string]any{"magnitude": 5.0, "p": 1.0}), optest.ImgSpec(1, 3, 3), in, 2, pos)
		for i := 1; i < len(in); i++ {
			if in[i-1] <= in[i] && got[i-1] > got[i] {
				t.Fatalf("sample %d: not monotonic (wrapped?): %v -> %v", pos, in, got)
			}
		}
		if got[0] != 0 {
			t.Fatalf("black became %d", got[0])
		}
	}
}

func TestGrayscale(t *testing.T) {
	in := rampImage(4, 5, 3)
	for _, p := range []float64{0, 1} {
		_, got := optest.Apply(t, optest.NewOp(t, "grayscale", map[string]any{"p": p}), optest.ImgSpec(4, 5, 3), in, 1, 0)
		want := slices.Clone(in)
		if p == 1 {
			for i := 0; i < len(in); i += 3 {
				g := byte(float64(0.299*float64(in[i])) + float64(0.587*float64(in[i+1])) + float64(0.114*float64(in[i+2])))
				want[i], want[i+1], want[i+2] = g, g, g
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("p=%v: got %v, want %v", p, got, want)
		}
	}
	if _, err := optest.NewOp(t, "grayscale", map[string]any{"p": 1.0}).Out(optest.ImgSpec(4, 5, 1)); err == nil {
		t.Fatal("grayscale accepted a one-channel image")
	}
}

func TestSolarize(t *testing.T) {
	in := make([]byte, 256*3)
	for i := range in {
		in[i] = byte(i / 3)
	}
	for _, tc := range []struct {
		threshold int
		p         float64
	}{{128, 1}, {0, 1}, {255, 1}, {128, 0}} {
		_, got := optest.Apply(t, optest.NewOp(t, "solarize", map[string]any{"threshold": tc.threshold, "p": tc.p}), optest.ImgSpec(16, 16, 3), in, 1, 0)
		for i, v := range in {
			want := v
			if tc.p == 1 && int(v) >= tc.threshold {
				want = 255 - v
			}
			if got[i] != want {
				t.Fatalf("threshold %d: %d -> %d, want %d", tc.threshold, v, got[i], want)
			}
		}
	}
}

// window is the reference crop: out[y][x] = in[top+y][left+x], zero outside.
func window(in []byte, h, w, c, top, left, oh, ow int) []byte {
	out := make([]byte, oh*ow*c)
	for y := 0; y < oh; y++ {
		for x := 0; x < ow; x++ {
			sy, sx := top+y, left+x
			if sy >= 0 && sy < h && sx >= 0 && sx < w {
				copy(out[(y*ow+x)*c:], in[(sy*w+sx)*c:(sy*w+sx+1)*c])
			}
		}
	}
	return out
}

func TestRandomCrop(t *testing.T) {
	const h, w, c = 6, 8, 3
	in := uniqueImage(h, w, c)
	for _, tc := range []struct{ oh, ow, padding int }{{6, 8, 0}, {4, 5, 0}, {6, 8, 2}, {3, 3, 1}, {10, 12, 2}} {
		t.Run(fmt.Sprintf("%dx%d_pad%d", tc.oh, tc.ow, tc.padding), func(t *testing.T) {
			seen := map[[2]int]bool{}
			for pos := uint64(0); pos < 300; pos++ {
				op := optest.NewOp(t, "random_crop", map[string]any{"size": []int{tc.oh, tc.ow}, "padding": tc.padding})
				out, got := optest.Apply(t, op, optest.ImgSpec(h, w, c), in, 9, pos)
				if !slices.Equal(out.Shape, []int{tc.oh, tc.ow, c}) {
					t.Fatalf("output shape %v", out.Shape)
				}
				found := false
				for top := -tc.padding; top <= h+tc.padding-tc.oh && !found; top++ {
					for left := -tc.padding; left <= w+tc.padding-tc.ow && !found; left++ {
						if slices.Equal(got, window(in, h, w, c, top, left, tc.oh, tc.ow)) {
							found = true
							seen[[2]int{top, left}] = true
						}
					}
				}
				if !found {
					t.Fatalf("sample %d: output is no window of the padded image", pos)
				}
			}
			if want := (h + 2*tc.padding - tc.oh + 1) * (w + 2*tc.padding - tc.ow + 1); len(seen) != want {
				t.Fatalf("saw %d of %d windows", len(seen), want)
			}
		})
	}
	if _, err := optest.NewOp(t, "random_crop", map[string]any{"size": []int{7, 8}, "padding": 0}).Out(optest.ImgSpec(h, w, c)); err == nil {
		t.Fatal("a crop larger than the image was accepted")
	}
}

// ---- labels and poison ---------------------------------------------------------

func TestReplaceLabel(t *testing.T) {
	op := optest.NewOp(t, "replace_label", map[string]any{"indices": []int{2, 5}, "label": -7})
	spec := pipeline.Spec{Shape: []int{1}, DType: "<i8"}
	for id := uint64(0); id < 8; id++ {
		in := binary.LittleEndian.AppendUint64(nil, 100+id)
		_, got := optest.Apply(t, op, spec, in, 0, id)
		want := int64(100 + id)
		if id == 2 || id == 5 {
			want = -7
		}
		if g := int64(binary.LittleEndian.Uint64(got)); g != want {
			t.Fatalf("sample %d: label %d, want %d", id, g, want)
		}
	}
	if _, err := op.Out(pipeline.Spec{Shape: []int{1}, DType: "<f8"}); err == nil {
		t.Fatal("replace_label accepted float labels")
	}
}

func TestPoison(t *testing.T) {
	const h, w, c = 3, 4, 3
	in := rampImage(h, w, c)
	mask := make([]float32, h*w*c)
	for i := range mask {
		mask[i] = float32(i*29%300) - 20 // some outside [0, 255]
	}
	op := optest.NewOp(t, "poison", map[string]any{"mask": mask, "alpha": 0.25, "indices": []int{1}, "clamp": []float32{10, 240}})
	for id := uint64(0); id < 3; id++ {
		_, got := optest.Apply(t, op, optest.ImgSpec(h, w, c), in, 0, id)
		for i, v := range in {
			want := v
			if id == 1 {
				f := float64(0.75*float64(v)) + float64(0.25*float64(mask[i]))
				want = byte(math.Min(240, math.Max(10, f)))
			}
			if got[i] != want {
				t.Fatalf("sample %d, byte %d: %d, want %d", id, i, got[i], want)
			}
		}
	}
}

// FFCV's Poison takes one alpha per pixel (an H×W array), shared by the channels.
func TestPoisonPerPixelAlpha(t *testing.T) {
	const h, w, c = 3, 4, 3
	in := rampImage(h, w, c)
	mask := make([]float32, h*w*c)
	alpha := make([]float32, h*w)
	for i := range mask {
		mask[i] = float32(i * 23 % 256)
	}
	for i := range alpha {
		alpha[i] = float32(i) / float32(h*w-1)
	}
	op := optest.NewOp(t, "poison", map[string]any{"mask": mask, "alpha_map": alpha, "indices": []int{0}, "clamp": []float32{0, 255}})
	_, got := optest.Apply(t, op, optest.ImgSpec(h, w, c), in, 0, 0)
	for i, v := range in {
		a := alpha[i/c]
		want := byte(math.Min(255, math.Max(0, float64(float32((1-a)*float32(v))+float32(a*mask[i])))))
		if got[i] != want {
			t.Fatalf("byte %d: %d, want %d", i, got[i], want)
		}
	}
	bad := optest.NewOp(t, "poison", map[string]any{"mask": mask, "alpha_map": alpha[:5], "indices": []int{0}})
	if _, err := bad.Out(optest.ImgSpec(h, w, c)); err == nil {
		t.Fatal("an alpha map of the wrong size was accepted")
	}
}
