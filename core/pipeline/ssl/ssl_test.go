package ssl

import (
	"encoding/json"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// Each op refuses bad arguments when it is built, and inputs it cannot
// take when its program is; their pixels are compared with torchvision in
// tests/python/test_augment_ops.py, their draws and sharing in
// core/pipeline/ops.

func TestBadArguments(t *testing.T) {
	optest.CheckBadArgs(t, []optest.BadArgs{
		{Name: "color_jitter", Args: map[string]any{"p": 1, "hue": []float64{-0.6, 0}}, Want: "hue"},
		{Name: "color_jitter", Args: map[string]any{"p": 1, "hue": []float64{0.2, 0.1}}, Want: "hue"},
		{Name: "color_jitter", Args: map[string]any{"p": 1, "brightness": []float64{-1, 1}}, Want: "brightness"},
		{Name: "color_jitter", Args: map[string]any{"p": 2}, Want: "jitter_prob 2 must be in [0, 1]"},
		{Name: "color_jitter", Args: map[string]any{"p": 1, "brightness": -0.5}, Want: "brightness -0.5 must be a number >= 0 or a (min, max) pair"},
		{Name: "color_jitter", Args: map[string]any{"p": 1, "contrast": []float64{1.5, 0.5}}, Want: "contrast [1.5,0.5]"},
		{Name: "color_jitter", Args: map[string]any{"p": 1, "saturation": "x"}, Want: `saturation "x"`},
		{Name: "color_jitter", Args: map[string]any{"p": 1, "hue": 0.6}, Want: "hue 0.6 must be a number in [0, 0.5]"},
		{Name: "gaussian_blur", Args: map[string]any{"p": 1.5, "kernel_size": 3, "sigma": 1}, Want: "blur_prob 1.5 must be in [0, 1]"},
		{Name: "gaussian_blur", Args: map[string]any{"p": 1, "kernel_size": 3, "sigma": -1}, Want: "sigma -1 must be a positive number or (min, max) pair"},
		{Name: "rotate", Args: map[string]any{"p": -0.5, "angle": 0.1}, Want: "rotate_prob -0.5 must be in [0, 1]"},
		{Name: "random_erasing", Args: map[string]any{"p": 1.1, "scale": []float64{0.1, 0.5}, "ratio": []float64{1, 1}, "value": []float64{0}}, Want: "erase_prob 1.1 must be in [0, 1]"},
		{Name: "random_erasing", Args: map[string]any{"p": 1, "scale": []float64{0.1, 0.5}, "ratio": []float64{1, 1}, "value": []float64{0, 300, 0}}, Want: "mean [0 300 0] must have values in [0, 255]"},
		{Name: "gaussian_blur", Args: map[string]any{"p": 1, "kernel_size": 4, "sigma": []float64{1, 1}}, Want: "kernel_size 4"},
		{Name: "gaussian_blur", Args: map[string]any{"p": 1, "kernel_size": 3, "sigma": []float64{0, 1}}, Want: "sigma"},
		{Name: "gaussian_blur", Args: map[string]any{"p": 1, "kernel_size": 3, "sigma": []float64{2, 1}}, Want: "sigma"},
		{Name: "rotate", Args: map[string]any{"p": 1, "angle": 0.1, "interpolation": "bicubic"}, Want: "interpolation"},
		{Name: "rotate", Args: map[string]any{"p": 1, "angle": -1}, Want: "angle"},
		{Name: "random_erasing", Args: map[string]any{"p": 1, "scale": []float64{0.5, 0.1}, "ratio": []float64{1, 1}, "value": []float64{0}}, Want: "scale"},
		{Name: "random_erasing", Args: map[string]any{"p": 1, "scale": []float64{0.1, 0.5}, "ratio": []float64{0, 1}, "value": []float64{0}}, Want: "ratio"},
		{Name: "random_erasing", Args: map[string]any{"p": 1, "scale": []float64{0.1, 0.5}, "ratio": []float64{1, 1}}, Want: "mean needs"},
	})
}

func TestBadInputs(t *testing.T) {
	optest.CheckBadInputs(t, []optest.BadInput{
		{Name: "color_jitter", Args: map[string]any{"p": 1}, In: optest.ImgSpec(8, 8, 4), Want: "1 or 3 channels"},
		{Name: "rotate", Args: map[string]any{"p": 1, "fill": []float32{1, 2}}, In: optest.ImgSpec(8, 8, 3), Want: "fill has 2 values"},
		{Name: "gaussian_blur", Args: map[string]any{"p": 1, "kernel_size": 9, "sigma": []float64{1, 1}}, In: optest.ImgSpec(4, 20, 3), Want: "kernel_size 9"},
		{Name: "random_erasing", Args: map[string]any{"p": 1, "scale": []float64{0.1, 0.2}, "ratio": []float64{1, 1}, "value": []float64{1, 2}}, In: optest.ImgSpec(8, 8, 3), Want: "mean has 2"},
	})
}

// torchvision's ColorJitter arguments: a number is a range around the
// identity, an identity range leaves the component out.
func TestJitterRange(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      *[2]float64
	}{
		{"brightness", "0.4", &[2]float64{0.6, 1.4}},
		{"brightness", "1.5", &[2]float64{0, 2.5}},
		{"brightness", "0", nil},
		{"brightness", "[1, 1]", nil},
		{"contrast", "[0.5, 2]", &[2]float64{0.5, 2}},
		{"saturation", "null", nil},
		{"hue", "0.1", &[2]float64{-0.1, 0.1}},
		{"hue", "[-0.2, 0.3]", &[2]float64{-0.2, 0.3}},
		{"hue", "0", nil},
	} {
		got, err := jitterRange(tc.name, json.RawMessage(tc.raw))
		if err != nil || (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s %s: %v, %v; want %v", tc.name, tc.raw, got, err, tc.want)
		}
	}
}
