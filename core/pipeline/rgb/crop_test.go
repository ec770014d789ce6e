package rgb

import (
	"encoding/binary"
	"image"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// A flip_h after a crop decoder is fused into the decoder's resize; the
// result must be byte-identical to running the two stages one by one, for
// JPEG and raw samples, every flip probability and both crop kinds, and a
// random operation after the flip must draw what it drew before.
func TestFuseFlipMatchesStages(t *testing.T) {
	const w, h = 120, 90
	pix, enc, col := testImage(t, w, h)
	samples := []struct {
		name string
		col  []byte
		heap []byte
	}{{"jpeg", col(field.ModeJPEG), enc}, {"raw", col(field.ModeRaw), pix}}
	r := optest.Reader(t)
	for _, dec := range []struct {
		name string
		args map[string]any
	}{
		{"rgb_rrc", map[string]any{"size": []int{32, 40}, "scale": []float64{0.08, 1}, "ratio": []float64{0.75, 4.0 / 3}}},
		{"rgb_center", map[string]any{"size": []int{24, 24}, "ratio": 0.875}},
	} {
		for _, p := range []float64{0, 0.5, 1} {
			ops := []optest.Named{{Name: dec.name, Args: dec.args}, {Name: "flip_h", Args: map[string]any{"p": p}},
				{Name: "brightness", Args: map[string]any{"magnitude": 0.5, "p": 0.5}}}
			stages := []pipeline.Op{newDecoder(t, dec.name, dec.args), optest.NewOp(t, ops[1].Name, ops[1].Args),
				optest.NewOp(t, ops[2].Name, ops[2].Args)}
			fused := optest.Build(t, r, optest.ImageField, ops...).Ops()
			if _, ok := fused[1].(pipeline.Fused); !ok {
				t.Fatalf("%s: flip_h was not fused", dec.name)
			}
			for _, s := range samples {
				flipped := 0
				for pos := uint64(0); pos < 40; pos++ {
					want := runOps(t, stages, s.col, s.heap, pos)
					got := runOps(t, fused, s.col, s.heap, pos)
					if !slices.Equal(got, want) {
						t.Fatalf("%s %s p=%v pos %d: fused result differs", dec.name, s.name, p, pos)
					}
					if !slices.Equal(want, runOps(t, stages[:1], s.col, s.heap, pos)) {
						flipped++
					}
				}
				if p == 1 && flipped < 30 {
					t.Errorf("%s %s p=1: only %d of 40 samples changed", dec.name, s.name, flipped)
				}
			}
		}
	}
}

// Only the crop decoders take the flip after them: not rgb_simple, nor the
// RandomResizedCrop transform, which shares their draw but not their Run.
func TestOnlyCropDecodersFuse(t *testing.T) {
	r := optest.Reader(t)
	flip := optest.Named{Name: "flip_h", Args: map[string]any{"p": 0.5}}
	rrc := map[string]any{"size": []int{4, 4}, "scale": []float64{0.2, 1}, "ratio": []float64{0.75, 4.0 / 3}}
	for _, ops := range [][]optest.Named{
		{{Name: "rgb_simple"}, flip},
		{{Name: "rgb_center", Args: map[string]any{"size": []int{6, 6}, "ratio": 1.0}}, {Name: "rrc", Args: rrc}, flip},
	} {
		got := optest.Build(t, r, optest.ImageField, ops...).Ops()
		if _, ok := got[len(got)-1].(pipeline.Fused); ok {
			t.Errorf("%s took the flip after it", ops[len(ops)-2].Name)
		}
	}
}

// runOps runs ops one by one in a fresh context (program semantics: op i
// draws with key i), with in and out the same buffer for in-place stages.
func runOps(t *testing.T, ops []pipeline.Op, col, heap []byte, pos uint64) []byte {
	t.Helper()
	c := pipeline.NewCtx()
	defer c.Close()
	c.Seed, c.Pos, c.Col, c.Heap = 7, pos, col, heap
	var in pipeline.Spec
	var cur []byte
	for i, op := range ops {
		out, err := op.Out(in)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, out.Bytes())
		if err := op.Run(c, i, cur, dst); err != nil {
			t.Fatal(err)
		}
		cur, in = dst, out
	}
	return cur
}

func TestRandomResizedCropInside(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 20000; i++ {
		w, h := 1+r.IntN(300), 1+r.IntN(300)
		if i%7 == 0 {
			w = 1 + r.IntN(3)
		}
		s0 := 0.01 + r.Float64()*0.99
		scale := [2]float64{s0, s0 + r.Float64()*(1.2-s0)}
		r0 := 0.2 + r.Float64()*2
		ratio := [2]float64{r0, r0 * (1 + r.Float64()*3)}
		rect := RandomResizedCrop(r, w, h, scale, ratio)
		if rect.Empty() || rect.Min.X < 0 || rect.Min.Y < 0 || rect.Max.X > w || rect.Max.Y > h {
			t.Fatalf("%dx%d scale %v ratio %v: crop %v outside the image", w, h, scale, ratio, rect)
		}
	}
}

func TestRandomResizedCropFallback(t *testing.T) {
	for _, tc := range []struct {
		w, h         int
		scale, ratio [2]float64
		want         image.Rectangle
	}{
		// image aspect 2 below the ratio range: full width, height w/ratio[0], centred
		{20, 10, [2]float64{1, 1}, [2]float64{2.5, 3}, image.Rect(0, 1, 20, 9)},
		// image aspect 0.5 above the range: full height, width h·ratio[1], centred
		{10, 20, [2]float64{1, 1}, [2]float64{0.1, 0.25}, image.Rect(2, 0, 7, 20)},
		// aspect inside the range but no try can fit (area > image): whole image
		{20, 10, [2]float64{1.5, 2}, [2]float64{1.9, 2.1}, image.Rect(0, 0, 20, 10)},
		{7, 7, [2]float64{2, 3}, [2]float64{0.75, 4.0 / 3}, image.Rect(0, 0, 7, 7)},
	} {
		for seed := uint64(0); seed < 20; seed++ {
			got := RandomResizedCrop(rand.New(rand.NewPCG(seed, 0)), tc.w, tc.h, tc.scale, tc.ratio)
			if got != tc.want {
				t.Fatalf("%dx%d scale %v ratio %v: %v, want %v", tc.w, tc.h, tc.scale, tc.ratio, got, tc.want)
			}
		}
	}
}

func TestSquareCrop(t *testing.T) {
	for _, tc := range []struct {
		w, h  int
		ratio float64
		want  image.Rectangle
	}{
		{100, 50, 0.875, image.Rect(28, 3, 71, 46)}, // c = int(43.75) = 43, at (57/2, 7/2)
		{50, 100, 1, image.Rect(0, 25, 50, 75)},
		{1, 1, 0.5, image.Rect(0, 0, 1, 1)},
	} {
		if got := SquareCrop(tc.w, tc.h, tc.ratio, ""); got != tc.want {
			t.Errorf("SquareCrop(%d, %d, %v) = %v, want %v", tc.w, tc.h, tc.ratio, got, tc.want)
		}
	}
}

// TestRRCTransformRaw checks the RandomResizedCrop transform keeps the shape
// and that a crop of a constant image stays constant.
func TestRRCTransformConstant(t *testing.T) {
	in := make([]byte, 40*30*3)
	for i := range in {
		in[i] = 77
	}
	op := optest.NewOp(t, "rrc", map[string]any{"size": []int{8, 12}, "scale": []float64{0.08, 1}, "ratio": []float64{0.75, 4.0 / 3}})
	for pos := uint64(0); pos < 20; pos++ {
		out, got := optest.Apply(t, op, optest.ImgSpec(30, 40, 3), in, 1, pos)
		if !slices.Equal(out.Shape, []int{8, 12, 3}) {
			t.Fatalf("shape %v", out.Shape)
		}
		for _, v := range got {
			if v != 77 {
				t.Fatalf("sample %d: constant image resized to %d", pos, v)
			}
		}
	}
}

// TestLabelRRCReportsTheDecoderCrop: label_rrc reads the image's metadata
// and reports the crop the rgb_rrc decoder with the same key takes.
func TestLabelRRCReportsTheDecoderCrop(t *testing.T) {
	const w, h = 48, 36
	pix, _, col := testImage(t, w, h)
	args := map[string]any{"size": []int{16, 16}, "scale": []float64{0.2, 0.8}, "ratio": []float64{0.75, 1.333}}
	dec := newDecoder(t, "rgb_rrc", args)
	lab := newDecoder(t, "label_rrc", map[string]any{"size": args["size"], "scale": args["scale"], "ratio": args["ratio"], "seed": 42})
	for pos := uint64(0); pos < 10; pos++ {
		c := pipeline.NewCtx()
		c.Seed, c.Pos, c.Col, c.Heap = 7, pos, col(field.ModeRaw), pix
		out := make([]byte, 16*16*3)
		if err := dec.Run(c, pipeline.SeedKey(42), nil, out); err != nil {
			t.Fatal(err)
		}
		spec, _ := lab.Out(pipeline.Spec{})
		if !slices.Equal(spec.Shape, []int{6}) || spec.DType != "<i4" {
			t.Fatalf("label_rrc output %v", spec)
		}
		p := make([]byte, 24)
		if err := lab.Run(c, pipeline.SeedKey(42), nil, p); err != nil {
			t.Fatal(err)
		}
		v := make([]int, 6)
		for i := range v {
			v[i] = int(int32(binary.LittleEndian.Uint32(p[4*i:])))
		}
		if v[0] != w || v[1] != h {
			t.Fatalf("size %v, want %dx%d", v[:2], w, h)
		}
		crop := image.Rect(v[3], v[2], v[3]+v[5], v[2]+v[4])
		want := make([]byte, len(out))
		new(imgproc.Resizer).ResizeArea(want, 16, 16, imgproc.SubRect(pix, w*3, 3, crop), crop.Dx(), crop.Dy(), w*3, 3)
		if !slices.Equal(out, want) {
			t.Fatalf("sample %d: decoder output is not the reported crop %v", pos, crop)
		}
	}
}

// newDecoder builds the decoder name of an RGBImageField with args.
func newDecoder(t *testing.T, name string, args map[string]any) pipeline.Op {
	t.Helper()
	r := optest.Reader(t)
	op, err := pipeline.New(pipeline.Env{Reader: r, Field: optest.ImageField, Desc: r.Fields[optest.ImageField]}, optest.Spec(t, name, args))
	if err != nil {
		t.Fatalf("%s%v: %v", name, args, err)
	}
	return op
}

// testImage returns a w x h test pattern, its JPEG at quality 90, and the
// RGBImageField column of either (by mode) for those sizes.
func testImage(t *testing.T, w, h int) (pix, enc []byte, col func(mode byte) []byte) {
	t.Helper()
	pix = make([]byte, w*h*3)
	for i := range pix {
		pix[i] = byte(i*31 + i/(w*3)*17)
	}
	enc, err := jpeg.Encode(pix, w, h, 90)
	if err != nil {
		t.Fatal(err)
	}
	col = func(mode byte) []byte {
		c := make([]byte, 13)
		c[field.RGBModeOff] = mode
		binary.LittleEndian.PutUint16(c[field.RGBWidthOff:], uint16(w))
		binary.LittleEndian.PutUint16(c[field.RGBHeightOff:], uint16(h))
		return c
	}
	return pix, enc, col
}
