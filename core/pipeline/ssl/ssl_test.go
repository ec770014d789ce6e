package ssl

import (
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
		{Name: "color_jitter", Args: map[string]any{"p": 2}, Want: "p 2"},
		{Name: "gaussian_blur", Args: map[string]any{"p": 1, "kernel_size": 4, "sigma": []float64{1, 1}}, Want: "kernel_size 4"},
		{Name: "gaussian_blur", Args: map[string]any{"p": 1, "kernel_size": 3, "sigma": []float64{0, 1}}, Want: "sigma"},
		{Name: "gaussian_blur", Args: map[string]any{"p": 1, "kernel_size": 3, "sigma": []float64{2, 1}}, Want: "sigma"},
		{Name: "rotate", Args: map[string]any{"p": 1, "angle": 0.1, "interpolation": "bicubic"}, Want: "interpolation"},
		{Name: "rotate", Args: map[string]any{"p": 1, "angle": -1}, Want: "angle"},
		{Name: "random_erasing", Args: map[string]any{"p": 1, "scale": []float64{0.5, 0.1}, "ratio": []float64{1, 1}, "value": []float64{0}}, Want: "scale"},
		{Name: "random_erasing", Args: map[string]any{"p": 1, "scale": []float64{0.1, 0.5}, "ratio": []float64{0, 1}, "value": []float64{0}}, Want: "ratio"},
		{Name: "random_erasing", Args: map[string]any{"p": 1, "scale": []float64{0.1, 0.5}, "ratio": []float64{1, 1}}, Want: "value"},
	})
}

func TestBadInputs(t *testing.T) {
	optest.CheckBadInputs(t, []optest.BadInput{
		{Name: "color_jitter", Args: map[string]any{"p": 1}, In: optest.ImgSpec(8, 8, 4), Want: "1 or 3 channels"},
		{Name: "rotate", Args: map[string]any{"p": 1, "fill": []float32{1, 2}}, In: optest.ImgSpec(8, 8, 3), Want: "fill has 2 values"},
		{Name: "gaussian_blur", Args: map[string]any{"p": 1, "kernel_size": 9, "sigma": []float64{1, 1}}, In: optest.ImgSpec(4, 20, 3), Want: "kernel_size 9"},
		{Name: "random_erasing", Args: map[string]any{"p": 1, "scale": []float64{0.1, 0.2}, "ratio": []float64{1, 1}, "value": []float64{1, 2}}, In: optest.ImgSpec(8, 8, 3), Want: "value has 2"},
	})
}
