package policy

import (
	"math"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// TestPolicyMagnitudes: the bins torchvision computes for its spaces.
func TestPolicyMagnitudes(t *testing.T) {
	for _, tc := range []struct {
		s          space
		op, i, bin int
		want       float64
		signed     bool
	}{
		{spaceRA, opPosterize, 0, 31, 8, false},
		{spaceRA, opPosterize, 9, 31, 7, false}, // 8 - 9/7.5 = 6.8
		{spaceRA, opPosterize, 30, 31, 4, false},
		{spaceTA, opPosterize, 30, 31, 2, false},
		{spaceAM, opPosterize, 9, 10, 0, false},
		{spaceRA, opSolarize, 0, 31, 1, false},
		{spaceRA, opSolarize, 30, 31, 0, false},
		{spaceRA, opRotate, 30, 31, 30, true},
		{spaceTA, opRotate, 30, 31, 135, true},
		{spaceRA, opShearX, 10, 11, 0.3, true},
		{spaceRA, opTranslateX, 30, 31, 150.0 / 331.0 * 40, true},
		{spaceRA, opTranslateY, 30, 31, 150.0 / 331.0 * 30, true},
		{spaceTA, opTranslateY, 30, 31, 32, true},
		{spaceAM, opTranslateX, 9, 10, 40.0 / 3, true},
	} {
		got, signed := tc.s.magnitude(tc.op, tc.i, tc.bin, 30, 40)
		if math.Abs(got-tc.want) > 1e-5*max(1, math.Abs(tc.want)) || signed != tc.signed {
			t.Errorf("%s bin %d of %d: %v (signed %v), want %v (%v)", augOps[tc.op], tc.i, tc.bin, got, signed, tc.want, tc.signed)
		}
	}
}

func TestBadArguments(t *testing.T) {
	optest.CheckBadArgs(t, []optest.BadArgs{
		{Name: "augment_op", Args: map[string]any{"name": "Shear"}, Want: `name "Shear" must be one of Identity, ShearX`},
		{Name: "augment_op", Args: map[string]any{"name": "Posterize", "magnitude": 9}, Want: "Posterize"},
		{Name: "augment_op", Args: map[string]any{"name": "Solarize", "magnitude": 1.5}, Want: "Solarize"},
		{Name: "augment_op", Args: map[string]any{"name": "Brightness", "magnitude": -1.5}, Want: "Brightness"},
		{Name: "rand_augment", Args: map[string]any{"magnitude": 31}, Want: "magnitude 31"},
		{Name: "rand_augment", Args: map[string]any{"magnitude": -1}, Want: "magnitude -1"},
		{Name: "rand_augment", Args: map[string]any{"num_ops": -1}, Want: "num_ops"},
		{Name: "rand_augment", Args: map[string]any{"num_magnitude_bins": 1, "magnitude": 0}, Want: "num_magnitude_bins"},
		{Name: "rand_augment", Args: map[string]any{"severity": 2}, Want: "takes no severity"},
		{Name: "trivial_augment_wide", Args: map[string]any{"num_magnitude_bins": 1}, Want: "num_magnitude_bins"},
		{Name: "auto_augment", Args: map[string]any{"policy": "cifar100"}, Want: "policy"},
		{Name: "augmix", Args: map[string]any{"severity": 0}, Want: "severity"},
		{Name: "augmix", Args: map[string]any{"mixture_width": 0}, Want: "mixture_width"},
		{Name: "augmix", Args: map[string]any{"alpha": 0}, Want: "alpha"},
	})
}

func TestBadInputs(t *testing.T) {
	optest.CheckBadInputs(t, []optest.BadInput{
		{Name: "rand_augment", Args: map[string]any{}, In: optest.ImgSpec(8, 8, 2), Want: "1 or 3 channels"},
		{Name: "rand_augment", Args: map[string]any{"fill": []float32{1, 2}}, In: optest.ImgSpec(8, 8, 3), Want: "fill has 2 values"},
		{Name: "augment_op", Args: map[string]any{"name": "Invert"}, In: pipeline.Spec{Shape: []int{8, 8, 3}, DType: "<f4"}, Want: "uint8"},
	})
}

// TestTables: each op builds the Color and Sharpness tables of exactly the
// factors it can draw (1 ± each bin's magnitude it draws them in), each
// the table imgproc builds for the factor.
func TestTables(t *testing.T) {
	enhance := func(top float64, bins int, idx ...int) []float64 {
		var fs []float64
		for _, i := range idx {
			m := imgproc.Linspace32(0, top, bins, i)
			fs = append(fs, 1+m, 1-m)
		}
		return fs
	}
	upTo := func(n int) []int {
		var idx []int
		for i := range n {
			idx = append(idx, i)
		}
		return idx
	}
	first64 := append(enhance(0.99, 100, upTo(32)...), 1+imgproc.Linspace32(0, 0.99, 100, 32))
	for _, tc := range []struct {
		name         string
		args         map[string]any
		color, sharp []float64
	}{
		{"rand_augment", map[string]any{"magnitude": 9}, enhance(0.9, 31, 9), enhance(0.9, 31, 9)},
		{"rand_augment", map[string]any{"magnitude": 0, "num_magnitude_bins": 5}, []float64{1}, []float64{1}},
		{"trivial_augment_wide", map[string]any{}, enhance(0.99, 31, upTo(31)...), enhance(0.99, 31, upTo(31)...)},
		// The first maxTables factors in bin order: bin 0's 1, then pairs.
		{"trivial_augment_wide", map[string]any{"num_magnitude_bins": 100}, first64, first64},
		{"auto_augment", map[string]any{"policy": "imagenet"}, enhance(0.9, 10, 0, 4, 2, 8), enhance(0.9, 10, 7)},
		{"auto_augment", map[string]any{"policy": "svhn"}, nil, nil},
		{"augmix", map[string]any{}, enhance(0.9, 10, 0, 1, 2), enhance(0.9, 10, 0, 1, 2)},
		{"augmix", map[string]any{"severity": 10, "all_ops": false}, nil, nil},
		{"augment_op", map[string]any{"name": "Color", "magnitude": -0.3}, []float64{0.7}, nil},
		{"augment_op", map[string]any{"name": "Sharpness", "magnitude": 0.5}, nil, []float64{1.5}},
		{"augment_op", map[string]any{"name": "Rotate", "magnitude": 10}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tabs *tables
			switch op := optest.NewOp(t, tc.name, tc.args).(type) {
			case *policy:
				tabs = op.tabs
			case geoPolicy:
				tabs = op.tabs
			case *augmentOp:
				tabs = op.tabs
			}
			wantSat, wantSharp := factorSet(tc.color), factorSet(tc.sharp)
			if len(tabs.sat) != len(wantSat) || len(tabs.sharp) != len(wantSharp) {
				t.Fatalf("%d Color and %d Sharpness tables, want %d and %d", len(tabs.sat), len(tabs.sharp), len(wantSat), len(wantSharp))
			}
			for _, f := range tc.color {
				tab, ok := tabs.sat[math.Float64bits(f)]
				if want := imgproc.NewSaturationTable(f); !ok || (tab == nil) != (want == nil) || tab != nil && *tab != *want {
					t.Fatalf("Color factor %v: table %v, want imgproc's", f, ok)
				}
			}
			for _, f := range tc.sharp {
				tab, ok := tabs.sharp[math.Float64bits(f)]
				if !ok || *tab != *imgproc.NewSharpenTable(f) {
					t.Fatalf("Sharpness factor %v: table %v, want imgproc's", f, ok)
				}
			}
		})
	}
}

// factorSet is fs without repeats.
func factorSet(fs []float64) map[float64]bool {
	s := map[float64]bool{}
	for _, f := range fs {
		s[f] = true
	}
	return s
}
