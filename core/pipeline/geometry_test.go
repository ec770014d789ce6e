package pipeline

import (
	"image"
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

// TestAffineCentred: a Centred step's window keeps the boxes whose centre,
// where the box is before the step (clipped), lies strictly inside it, and
// later steps carry the windows.
func TestAffineCentred(t *testing.T) {
	before := Identity(100, 80).Then(Step{SX: 0.5, SY: 0.5, W: 50, H: 40}) // halved
	a := before
	a.Centres = []CentreWindow{{Before: before, Win: [4]float64{10, 10, 30, 30}}}
	a = a.Then(CropStep(image.Rect(10, 10, 30, 30), 20, 20)).Then(Same(20, 20).FlipX())
	for _, c := range []struct {
		box  [4]float64
		want bool
	}{
		{[4]float64{30, 30, 50, 50}, true},   // centre (20, 20) after halving
		{[4]float64{0, 0, 40, 40}, false},    // centre (10, 10): on the edge
		{[4]float64{18, 18, 60, 60}, true},   // (19.5, 19.5)
		{[4]float64{70, 0, 100, 20}, false},  // (42.5, 5)
		{[4]float64{-40, 30, 42, 50}, true},  // clipped to x in [0, 21): centre 10.5
		{[4]float64{-40, 30, 40, 50}, false}, // clipped: centre 10
	} {
		if got := a.Centred(c.box); got != c.want {
			t.Errorf("box %v: kept %v, want %v", c.box, got, c.want)
		}
	}
	if !Identity(10, 10).Centred([4]float64{100, 100, 200, 200}) {
		t.Error("no window dropped a box")
	}
}
