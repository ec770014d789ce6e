package rgb

import (
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// Each crop refuses bad arguments when it is built, without a file (the
// decoders check them before they look at their field).
func TestBadArguments(t *testing.T) {
	rrc := func(kv ...any) map[string]any {
		m := map[string]any{"size": []int{8, 8}, "scale": []float64{0.08, 1}, "ratio": []float64{0.75, 1.33}}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	var cases []optest.BadArgs
	for _, name := range []string{"rgb_rrc", "rrc", "label_rrc"} {
		cases = append(cases,
			optest.BadArgs{Name: name, Args: rrc("size", []int{0, 8}), Want: "output_size [0 8] must be (height, width) in [1, 65535]"},
			optest.BadArgs{Name: name, Args: rrc("size", []int{8, 70000}), Want: "output_size [8 70000]"},
			optest.BadArgs{Name: name, Args: rrc("scale", []float64{0, 1}), Want: "scale [0 1] must be (min, max) with 0 < min <= max"},
			optest.BadArgs{Name: name, Args: rrc("scale", []float64{0.5, 0.1}), Want: "scale [0.5 0.1]"},
			optest.BadArgs{Name: name, Args: rrc("ratio", []float64{1.5, 0.5}), Want: "ratio [1.5,0.5] must be (min, max) with 0 < min <= max"},
			optest.BadArgs{Name: name, Args: rrc("ratio", 0.5), Want: "ratio 0.5"},
			optest.BadArgs{Name: name, Args: rrc("second_seed", 3), Want: "second_seed needs a seed too"},
			optest.BadArgs{Name: name, Args: rrc("corner", "top_left"), Want: "takes no corner"},
		)
	}
	for _, name := range []string{"rgb_center", "center_crop", "rgb_corner", "corner_crop"} {
		corner := map[string]any{}
		if name == "rgb_corner" || name == "corner_crop" {
			corner["corner"] = "top_left"
		}
		args := func(kv ...any) map[string]any {
			m := map[string]any{"size": []int{8, 8}, "ratio": 0.875}
			for k, v := range corner {
				m[k] = v
			}
			for i := 0; i < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		}
		cases = append(cases,
			optest.BadArgs{Name: name, Args: args("size", []int{4, 0}), Want: "output_size [4 0]"},
			optest.BadArgs{Name: name, Args: args("ratio", 1.5), Want: "ratio 1.5 must be a number in (0, 1]"},
			optest.BadArgs{Name: name, Args: args("ratio", 0), Want: "ratio 0 must be"},
			optest.BadArgs{Name: name, Args: args("scale", []float64{0.1, 1}), Want: "takes no scale"},
			optest.BadArgs{Name: name, Args: args("second_seed", 3, "seed", 2), Want: "takes no scale or second_seed"},
		)
	}
	cases = append(cases,
		optest.BadArgs{Name: "center_crop", Args: map[string]any{"size": []int{4, 4}, "ratio": 1, "corner": "top_left"}, Want: "takes no corner"},
		optest.BadArgs{Name: "corner_crop", Args: map[string]any{"size": []int{4, 4}, "ratio": 1, "corner": "middle"}, Want: `corner "middle" must be top_left, top_right, bottom_left or bottom_right`},
		optest.BadArgs{Name: "rgb_corner", Args: map[string]any{"size": []int{4, 4}, "ratio": 1}, Want: `corner "" must be`},
		optest.BadArgs{Name: "rgb_resize_pad", Args: map[string]any{"size": []int{0, 4}, "scale": []float64{1, 1}, "fill": []int{0, 0, 0}}, Want: "output_size [0 4]"},
		optest.BadArgs{Name: "rgb_resize_pad", Args: map[string]any{"size": []int{4, 4}, "scale": []float64{0.5, 1.5}, "fill": []int{0, 0, 0}}, Want: "scale [0.5 1.5] must be (min, max) with 0 < min <= max <= 1"},
		optest.BadArgs{Name: "rgb_resize_pad", Args: map[string]any{"size": []int{4, 4}, "scale": []float64{1, 1}, "fill": []int{0, 0}}, Want: "fill needs 3 values"},
		optest.BadArgs{Name: "rgb_resize_pad", Args: map[string]any{"size": []int{4, 4}, "scale": []float64{1, 1}, "fill": []int{0, 0, 256}}, Want: "fill [0 0 256] must have values in [0, 255]"},
		optest.BadArgs{Name: "label_rrc", Args: rrc(), Want: "seed is missing"},
		optest.BadArgs{Name: "rgb_pad", Args: map[string]any{"size": []int{4, 4}}, Want: `unknown field "size"`},
	)
	optest.CheckBadArgs(t, cases)
}
