package pipeline

import (
	"image"
	"math"
	"testing"
)

// Each step's map sends stored-image points where the image's pixels go.
func TestAffineSteps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		a     Affine
		box   [4]float64
		want  [4]float64
		valid [4]float64
	}{
		{"identity", Identity(100, 50), [4]float64{10, 5, 20, 15}, [4]float64{10, 5, 20, 15}, [4]float64{0, 0, 100, 50}},
		{"flip h", Identity(100, 50).Then(Same(100, 50).FlipX()), [4]float64{10, 5, 20, 15}, [4]float64{80, 5, 90, 15}, [4]float64{0, 0, 100, 50}},
		{"flip v", Identity(100, 50).Then(Same(100, 50).FlipY()), [4]float64{10, 5, 20, 15}, [4]float64{10, 35, 20, 45}, [4]float64{0, 0, 100, 50}},
		{"crop and double", Identity(100, 50).Then(CropStep(image.Rect(10, 5, 50, 25), 80, 40)), [4]float64{10, 5, 20, 15}, [4]float64{0, 0, 20, 20}, [4]float64{0, 0, 80, 40}},
		{"crop clips", Identity(100, 50).Then(CropStep(image.Rect(15, 10, 55, 30), 40, 20)), [4]float64{10, 5, 20, 15}, [4]float64{0, 0, 5, 5}, [4]float64{0, 0, 40, 20}},
		{"shift leaves padding", Identity(100, 50).Then(Step{SX: 1, TX: 7, SY: 1, TY: -3, W: 100, H: 50}), [4]float64{90, 0, 100, 10}, [4]float64{97, 0, 100, 7}, [4]float64{7, 0, 100, 47}},
		{"window past the edge", Identity(100, 50).Then(Step{SX: 1, TX: 4, SY: 1, TY: 4, W: 30, H: 30}), [4]float64{0, 0, 10, 10}, [4]float64{4, 4, 14, 14}, [4]float64{4, 4, 30, 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := tc.a.Box(tc.box)
			if got != tc.want || tc.a.Valid != tc.valid {
				t.Fatalf("box %v, valid %v; want %v, %v", got, tc.a.Valid, tc.want, tc.valid)
			}
		})
	}
}

// Nearest-neighbour sampling inverts the map at pixel centres: a flip
// mirrors columns exactly, a 2x crop repeats each source pixel twice.
func TestSourceIndex(t *testing.T) {
	flip := Identity(5, 1).Then(Same(5, 1).FlipX())
	for x := 0; x < 5; x++ {
		if got := sourceIndex(x, flip.SX, flip.TX, 5); got != 4-x {
			t.Fatalf("flip: column %d from %d, want %d", x, got, 4-x)
		}
	}
	zoom := Identity(10, 1).Then(CropStep(image.Rect(3, 0, 7, 1), 8, 1))
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
	if math.IsNaN(Identity(1, 1).SX) {
		t.Fatal("identity")
	}
}
