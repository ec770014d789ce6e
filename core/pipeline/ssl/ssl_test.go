package ssl

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/internal/testimg"
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

// Each op on images whose result is known without a reference: what it
// must leave alone (p=0; a constant image under blur, or under a nearest
// rotation filled with the same value) and what erasing writes. (A
// bilinear rotation darkens a constant image's edges even with its own
// fill, as torchvision's does: its mask weighs the zero padding in twice.)
func TestOpsOnKnownImages(t *testing.T) {
	const h, w, c = 12, 16, 3
	photo := testimg.PhotoLike(h, w, c)
	flat := bytes.Repeat([]byte{90}, h*w*c)
	same := func(t *testing.T, in, out []byte) {
		if !bytes.Equal(in, out) {
			t.Fatal("the image changed")
		}
	}
	erased := func(value []byte, scale [2]float64) func(*testing.T, []byte, []byte) {
		return func(t *testing.T, in, out []byte) {
			// The changed pixels lie in one rectangle, every pixel of it value.
			x0, y0, x1, y1 := w, h, -1, -1
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					i := (y*w + x) * c
					if !bytes.Equal(in[i:i+c], out[i:i+c]) {
						x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
					}
				}
			}
			if x1 < 0 {
				return // ten tries that did not fit: nothing erased, as torchvision
			}
			for y := y0; y <= y1; y++ {
				for x := x0; x <= x1; x++ {
					for k := 0; k < c; k++ {
						if got := out[(y*w+x)*c+k]; got != value[k%len(value)] {
							t.Fatalf("pixel (%d, %d) channel %d of the erased rectangle is %d", x, y, k, got)
						}
					}
				}
			}
			area := float64((x1-x0+1)*(y1-y0+1)) / float64(h*w)
			if area > scale[1]+0.1 {
				t.Fatalf("erased %.2f of the image, scale %v", area, scale)
			}
		}
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		in   []byte
		want func(t *testing.T, in, out []byte)
	}{
		{"rotate", map[string]any{"p": 0, "angle": 1}, photo, same},
		{"rotate", map[string]any{"p": 1, "angle": 1, "fill": []float32{90}}, flat, same},
		{"gaussian_blur", map[string]any{"p": 0, "kernel_size": 5, "sigma": 2}, photo, same},
		{"gaussian_blur", map[string]any{"p": 1, "kernel_size": 5, "sigma": []float64{0.5, 3}}, flat, same},
		{"color_jitter", map[string]any{"p": 0, "brightness": 0.5, "hue": 0.3}, photo, same},
		{"random_erasing", map[string]any{"p": 0, "scale": []float64{0.1, 0.3}, "ratio": []float64{0.5, 2}, "value": []float64{7}}, photo, same},
		{"random_erasing", map[string]any{"p": 1, "scale": []float64{0.1, 0.3}, "ratio": []float64{0.5, 2}, "value": []float64{7}}, photo, erased([]byte{7}, [2]float64{0.1, 0.3})},
		{"random_erasing", map[string]any{"p": 1, "scale": []float64{0.05, 0.2}, "ratio": []float64{0.3, 3}, "value": []float64{10, 20, 30}}, photo, erased([]byte{10, 20, 30}, [2]float64{0.05, 0.2})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := optest.NewOp(t, tc.name, tc.args)
			changed := 0
			for pos := uint64(0); pos < 20; pos++ {
				_, out := optest.Apply(t, op, optest.ImgSpec(h, w, c), tc.in, 1, pos)
				tc.want(t, tc.in, out)
				if !bytes.Equal(out, tc.in) {
					changed++
				}
			}
			if _, erasing := tc.args["value"]; erasing && tc.args["p"] == 1 && changed == 0 {
				t.Fatal("random_erasing with p=1 erased nothing in 20 samples")
			}
		})
	}
}
