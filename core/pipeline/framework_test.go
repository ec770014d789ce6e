package pipeline_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/internal/testimg"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// The framework with operations of its own tests: fusing, view sharing and
// the registry, through Build as the families use them.

var testImage = testimg.PhotoLike(2, 3, 3)

// testDecoder decodes every sample as testImage; it takes an HFlip after
// it and records what ShareViews tells it.
type testDecoder struct {
	flip    pipeline.HFlip
	flipKey int
	shared  []string
}

func (d *testDecoder) Out(pipeline.Spec) (pipeline.Spec, error) { return optest.ImgSpec(2, 3, 3), nil }

func (d *testDecoder) Run(c *pipeline.Ctx, _ int, _, out []byte) error {
	copy(out, testImage)
	if d.flip != nil && d.flip.Flips(c, d.flipKey) {
		mirror(out)
	}
	return nil
}

func (d *testDecoder) Fuse(next pipeline.Op, key int) bool {
	f, ok := next.(pipeline.HFlip)
	if !ok || d.flip != nil {
		return false
	}
	d.flip, d.flipKey = f, key
	return true
}

func (d *testDecoder) ShareViews(field int, last bool) {
	d.shared = append(d.shared, fmt.Sprint(field, last))
}

// testFlip mirrors 2×3 RGB images half the time.
type testFlip struct{ pipeline.SameImage }

func (f *testFlip) Flips(c *pipeline.Ctx, key int) bool { return c.Rand(key).Float64() < 0.5 }

func (f *testFlip) Run(c *pipeline.Ctx, key int, in, out []byte) error {
	pipeline.CopyIfNeeded(out, in)
	if f.Flips(c, key) {
		mirror(out)
	}
	return nil
}

func mirror(img []byte) {
	for y := 0; y < 2; y++ {
		row := img[9*y : 9*y+9]
		for k := 0; k < 3; k++ {
			row[k], row[6+k] = row[6+k], row[k]
		}
	}
}

func init() {
	pipeline.RegisterDecoder("test_decoder", func(pipeline.Env, json.RawMessage) (pipeline.Op, error) {
		return &testDecoder{}, nil
	})
	pipeline.Register("test_flip", func(pipeline.Env, json.RawMessage) (pipeline.Op, error) {
		return &testFlip{}, nil
	})
}

// A Fuser takes the HFlip right after it, which becomes Fused, and draws
// under the flip's key: the program's output is the stages' run one by one.
func TestFuse(t *testing.T) {
	ops := []optest.Named{{Name: "test_decoder"}, {Name: "test_flip"}, {Name: "test_flip"}}
	p := optest.Build(t, optest.Reader(t), optest.ImageField, ops...)
	got := p.Ops()
	if _, ok := got[1].(pipeline.Fused); !ok {
		t.Fatalf("op 1 is %T, not Fused", got[1])
	}
	if _, ok := got[2].(*testFlip); !ok {
		t.Fatalf("op 2 is %T: a Fuser takes only the op right after it", got[2])
	}
	if d := got[0].(*testDecoder); d.flipKey != 1 {
		t.Fatalf("the fused flip draws under key %d, not its own 1", d.flipKey)
	}
	stages := []pipeline.Op{&testDecoder{}, &testFlip{}, &testFlip{}}
	flipped := 0
	var s pipeline.Scratch
	for pos := uint64(0); pos < 40; pos++ {
		c := pipeline.NewCtx()
		c.Seed, c.Pos = 3, pos
		out := make([]byte, len(testImage))
		if err := p.Run(c, &s, nil, out); err != nil {
			t.Fatal(err)
		}
		want := make([]byte, len(testImage))
		for k, op := range stages {
			if err := op.Run(c, k, want, want); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(out, want) {
			t.Fatalf("sample %d: the fused program gives %v, the stages %v", pos, out, want)
		}
		if !slices.Equal(out, testImage) {
			flipped++
		}
	}
	if flipped == 0 || flipped == 40 {
		t.Fatalf("%d of 40 samples flipped", flipped)
	}
	if st, err := (pipeline.Fused{}).Place(nil, 0, 3, 2); err != nil || st != pipeline.Same(3, 2) {
		t.Fatalf("Fused places %v, %v: it moves nothing of its own", st, err)
	}
}

// ShareViews tells the decoders of a field that two or more programs
// decode, the last in order marked last, and no other.
func TestShareViews(t *testing.T) {
	r := optest.Reader(t)
	var progs []*pipeline.Program
	for _, f := range []int{optest.ImageField, optest.LabelField, optest.ImageField, optest.ImageField} {
		progs = append(progs, optest.Build(t, r, f, optest.Named{Name: "test_decoder"}))
	}
	pipeline.ShareViews(progs)
	img := fmt.Sprint(optest.ImageField)
	for i, want := range [][]string{{img + " false"}, nil, {img + " false"}, {img + " true"}} {
		if got := progs[i].Ops()[0].(*testDecoder).shared; !slices.Equal(got, want) {
			t.Errorf("program %d was told %q, want %q", i, got, want)
		}
	}
}

func TestRegistry(t *testing.T) {
	for _, name := range []string{"test_decoder", "test_flip"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s registered twice without a panic", name)
				}
			}()
			pipeline.RegisterBatch(name, nil)
		}()
	}
	if !slices.Contains(pipeline.Names(), "test_flip") || slices.Contains(pipeline.BatchNames(), "test_flip") {
		t.Errorf("names %v, batch names %v", pipeline.Names(), pipeline.BatchNames())
	}
	r := optest.Reader(t)
	for _, tc := range []struct {
		ops  []string
		want string
	}{
		{[]string{`{"op": "nope"}`}, `unknown operation "nope"`},
		{[]string{`{"op": "test_decoder"}`, `{"op": "test_decoder"}`}, "decoder test_decoder must come first"},
		{nil, "empty pipeline"},
	} {
		raw := make([]json.RawMessage, len(tc.ops))
		for i, op := range tc.ops {
			raw[i] = json.RawMessage(op)
		}
		if _, err := pipeline.Build(r, optest.ImageField, raw); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error about %q", tc.ops, err, tc.want)
		}
	}
	if _, err := pipeline.New(pipeline.Env{}, json.RawMessage(`{"op": "nope"}`)); err == nil || !strings.Contains(err.Error(), "unknown operation") {
		t.Errorf("New: %v", err)
	}
	if _, err := pipeline.NewBatch(json.RawMessage(`{"op": "test_flip"}`)); err == nil || !strings.Contains(err.Error(), "unknown batch operation") {
		t.Errorf("NewBatch of a per-sample op: %v", err)
	}
}
