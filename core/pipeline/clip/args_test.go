package clip

import (
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// The clip decoders refuse bad arguments, their geometry's included,
// before they look at their field (pipeline.Check, without a file).
func TestBadArguments(t *testing.T) {
	crop := func(size []int) map[string]any { return map[string]any{"op": "rgb_center", "size": size, "ratio": 1} }
	optest.CheckBadArgs(t, []optest.BadArgs{
		{Name: "clip_random", Args: map[string]any{"num_frames": 0, "stride": 1}, Want: "num_frames 0 must be at least 1"},
		{Name: "clip_random", Args: map[string]any{"num_frames": 4, "stride": 0}, Want: "give a stride >= 1 or an fps > 0"},
		{Name: "clip_random", Args: map[string]any{"num_frames": 4, "stride": 1, "short": "wrap"}, Want: `short "wrap"`},
		{Name: "clip_random", Args: map[string]any{"num_frames": 4, "stride": 1, "num_clips": 2}, Want: "num_clips"},
		{Name: "clip_eval", Args: map[string]any{"num_frames": 4, "stride": 1, "num_clips": 0}, Want: "num_clips 0 must be at least 1"},
		{Name: "clip_eval", Args: map[string]any{"num_frames": 4, "stride": 1, "num_clips": 1, "geometry": crop([]int{0, 4})}, Want: "geometry: rgb_center: output_size [0 4]"},
		{Name: "clip_random", Args: map[string]any{"num_frames": 4, "stride": 1, "geometry": map[string]any{"op": "flip_h", "p": 1}}, Want: "not an image decoder"},
		{Name: "clip_random", Args: map[string]any{"num_frames": 4, "stride": 1, "geometry": map[string]any{"op": "rgb_simple", "x": 1}}, Want: `unknown field "x"`},
	})
}
