package targets

import (
	"image"
	"math"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// Nearest-neighbour sampling inverts the map at pixel centres: a flip
// mirrors columns exactly, a 2x crop repeats each source pixel twice.
func TestSourceIndex(t *testing.T) {
	flip := pipeline.Identity(5, 1).Then(pipeline.Same(5, 1).FlipX())
	for x := 0; x < 5; x++ {
		if got := sourceIndex(x, flip.SX, flip.TX, 5); got != 4-x {
			t.Fatalf("flip: column %d from %d, want %d", x, got, 4-x)
		}
	}
	zoom := pipeline.Identity(10, 1).Then(pipeline.CropStep(image.Rect(3, 0, 7, 1), 8, 1))
	for x := 0; x < 8; x++ {
		if got := sourceIndex(x, zoom.SX, zoom.TX, 10); got != 3+x/2 {
			t.Fatalf("zoom: column %d from %d, want %d", x, got, 3+x/2)
		}
	}
}

func TestBoxFilter(t *testing.T) {
	f := BoxFilter{MinSize: 2, MinArea: 9, MinVisibility: 0.5}
	for _, tc := range []struct {
		box  [4]float64
		area float64
		keep bool
	}{
		{[4]float64{0, 0, 4, 4}, 16, true},
		{[4]float64{0, 0, 1.5, 10}, 15, false}, // too narrow
		{[4]float64{0, 0, 2.5, 3}, 7.5, false}, // too small
		{[4]float64{0, 0, 4, 4}, 40, false},    // under half visible
		{[4]float64{3, 3, 3, 8}, 0, false},     // empty
	} {
		if got := f.keep(tc.box, tc.area); got != tc.keep {
			t.Errorf("keep(%v, %v) = %v, want %v", tc.box, tc.area, got, tc.keep)
		}
	}
	if math.IsNaN(pipeline.Identity(1, 1).SX) {
		t.Fatal("identity")
	}
}

// The decoders refuse bad arguments before they look at their field.
func TestBadArguments(t *testing.T) {
	optest.CheckBadArgs(t, []optest.BadArgs{
		{Name: "ragged", Args: map[string]any{"max_rows": -1}, Want: "max_rows -1 must not be negative"},
		{Name: "ragged", Args: map[string]any{"max_rows": 2, "min_size": -1}, Want: "min_size -1"},
		{Name: "ragged", Args: map[string]any{"max_rows": 2, "min_area": -1}, Want: "min_area -1"},
		{Name: "ragged", Args: map[string]any{"max_rows": 2, "min_visibility": 1.5}, Want: "min_visibility 1.5 must be in [0, 1]"},
		{Name: "mask", Args: map[string]any{"fill": -1}, Want: "fill -1 must be in [0, 65535]"},
		{Name: "mask", Args: map[string]any{"fill": 0, "min_visibility": -0.5}, Want: "min_visibility -0.5"},
	})
}
