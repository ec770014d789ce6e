package transform

import (
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// Each op refuses bad arguments when it is built, without a file, with an
// error that names the argument as Python's constructor does.
func TestBadArguments(t *testing.T) {
	black := []int{0, 0, 0}
	mask := []float32{0, 0, 0}
	optest.CheckBadArgs(t, []optest.BadArgs{
		{Name: "flip_h", Args: map[string]any{"p": 1.5}, Want: "flip_prob 1.5 must be in [0, 1]"},
		{Name: "flip_v", Args: map[string]any{"p": -0.1}, Want: "flip_prob -0.1 must be in [0, 1]"},
		{Name: "translate", Args: map[string]any{"padding": -1, "fill": black}, Want: "padding -1 must not be negative"},
		{Name: "translate", Args: map[string]any{"padding": 2, "fill": []int{0, 300, 0}}, Want: "fill [0 300 0] must have values in [0, 255]"},
		{Name: "cutout", Args: map[string]any{"size": 0, "fill": black}, Want: "crop_size 0 must be positive"},
		{Name: "cutout", Args: map[string]any{"size": 2, "fill": []int{-1}}, Want: "fill [-1]"},
		{Name: "brightness", Args: map[string]any{"magnitude": -0.1, "p": 0.5}, Want: "magnitude -0.1"},
		{Name: "contrast", Args: map[string]any{"magnitude": 0.1, "p": 2}, Want: "p 2 must be in [0, 1]"},
		{Name: "saturation", Args: map[string]any{"magnitude": 0.1, "p": -1}, Want: "p -1 must be in [0, 1]"},
		{Name: "grayscale", Args: map[string]any{"p": 1.2}, Want: "gray_prob 1.2 must be in [0, 1]"},
		{Name: "solarize", Args: map[string]any{"threshold": 0.2, "p": 128}, Want: "arguments"}, // a float threshold
		{Name: "solarize", Args: map[string]any{"threshold": 128, "p": 128}, Want: "solarization_prob 128 must be in [0, 1]"},
		{Name: "solarize", Args: map[string]any{"threshold": 256, "p": 0.2}, Want: "threshold 256 must be in [0, 255]"},
		{Name: "solarize", Args: map[string]any{"threshold": -1, "p": 0.2}, Want: "threshold -1"},
		{Name: "random_perspective", Args: map[string]any{"degrees": -1}, Want: "degrees -1 must be finite and not negative"},
		{Name: "random_perspective", Args: map[string]any{"shear": 90}, Want: "shear 90 must be under 90 degrees"},
		{Name: "random_perspective", Args: map[string]any{"fill": []int{0, 256, 0}}, Want: "fill [0 256 0] must have values in [0, 255]"},
		{Name: "random_crop", Args: map[string]any{"size": []int{0, 4}}, Want: "size [0 4] must be positive"},
		{Name: "random_crop", Args: map[string]any{"size": []int{4, 4}, "padding": -2}, Want: "padding -2"},
		{Name: "normalize", Args: map[string]any{"mean": []float64{0}, "std": []float64{0}, "dtype": "<f4"}, Want: "std [0]"},
		{Name: "normalize", Args: map[string]any{"mean": []float64{0, 1}, "std": []float64{1}, "dtype": "<f4"}, Want: "one value per channel"},
		{Name: "normalize", Args: map[string]any{"mean": []float64{0}, "std": []float64{1}, "dtype": "<f8"}, Want: "type"},
		{Name: "poison", Args: map[string]any{"mask": mask, "alpha": 1.5, "clamp": []int{0, 255}}, Want: "alpha 1.5 must be in [0, 1]"},
		{Name: "poison", Args: map[string]any{"mask": mask, "alpha_map": []float32{0.5, 2}, "clamp": []int{0, 255}}, Want: "alpha has 2"},
		{Name: "poison", Args: map[string]any{"mask": mask, "alpha": 0.5, "clamp": []int{255, 0}}, Want: "clamp [255 0]"},
		{Name: "image_mixup", Args: map[string]any{"alpha": 0, "same_lambda": true}, Want: "alpha 0 must be positive"},
		{Name: "label_mixup", Args: map[string]any{"alpha": -1, "same_lambda": false}, Want: "alpha -1 must be positive"},
	})
}
