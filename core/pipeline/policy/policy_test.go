package policy

import (
	"math"
	"testing"

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
		{Name: "augment_op", Args: map[string]any{"name": "Shear"}, Want: "unknown augmentation"},
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
