package transform

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// fakeDecoder decodes every sample as one image.
type fakeDecoder struct {
	spec pipeline.Spec
	img  []byte
}

func (d fakeDecoder) Out(pipeline.Spec) (pipeline.Spec, error) { return d.spec, nil }
func (d fakeDecoder) Run(_ *pipeline.Ctx, _ int, _, out []byte) error {
	copy(out, d.img)
	return nil
}

func init() {
	pipeline.RegisterDecoder("test_unique_image", func(pipeline.Env, json.RawMessage) (pipeline.Op, error) {
		return fakeDecoder{optest.ImgSpec(6, 8, 3), uniqueImage(6, 8, 3)}, nil
	})
}

// TestProgramRunMatchesStages builds a program of transforms fed by a fake
// decoder and checks it equals running the stages one by one, each with
// its own buffers.
func TestProgramRunMatchesStages(t *testing.T) {
	ops := []optest.Named{
		{Name: "test_unique_image"},
		{Name: "flip_h", Args: map[string]any{"p": 0.5}},
		{Name: "translate", Args: map[string]any{"padding": 2, "fill": []int{0, 0, 0}}},
		{Name: "cutout", Args: map[string]any{"size": 2, "fill": []int{9, 9, 9}}},
		{Name: "brightness", Args: map[string]any{"magnitude": 0.5, "p": 0.5}},
		{Name: "random_crop", Args: map[string]any{"size": []int{4, 4}, "padding": 1}},
		{Name: "normalize", Args: map[string]any{"mean": []float32{1, 2, 3}, "std": []float32{4, 5, 6}, "dtype": "<f2"}},
	}
	p := optest.Build(t, optest.Reader(t), optest.ImageField, ops...)
	var stages []pipeline.Op
	var specs []pipeline.Spec
	var in pipeline.Spec
	for _, o := range ops {
		op := optest.NewOp(t, o.Name, o.Args)
		out, err := op.Out(in)
		if err != nil {
			t.Fatal(err)
		}
		stages, specs, in = append(stages, op), append(specs, out), out
	}
	if !slices.Equal(p.Out.Shape, in.Shape) || p.Out.DType != in.DType {
		t.Fatalf("program output %v, the stages' %v", p.Out, in)
	}
	var s pipeline.Scratch
	for pos := uint64(0); pos < 30; pos++ {
		c := pipeline.NewCtx()
		c.Seed, c.Pos = 4, pos
		got := make([]byte, p.Out.Bytes())
		if err := p.Run(c, &s, nil, got); err != nil {
			t.Fatal(err)
		}
		var cur []byte
		for i, op := range stages {
			dst := make([]byte, specs[i].Bytes())
			if err := op.Run(c, i, cur, dst); err != nil {
				t.Fatal(err)
			}
			cur = dst
		}
		if !slices.Equal(got, cur) {
			t.Fatalf("sample %d: the program differs from the stages run one by one", pos)
		}
	}
}
