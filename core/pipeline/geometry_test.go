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

// rot90 turns a w×h image a quarter turn clockwise (y down) onto h×w:
// (x, y) lands at (h − y, x).
func rot90(w, h int) Step {
	return WarpStep(Matrix{0, -1, float64(h), 1, 0, 0, 0, 0, 1}, 1, h, w)
}

// Maps that are not axis-aligned compose with the axis-aligned ones:
// boxes are the bounds of their mapped corners, clipped to the visible
// part, and the area the filter compares with is the box's as it enters
// the last warp (clipped by the stages before it, as YOLO clips a mosaic's
// boxes to its canvas) times the area factors from there on.
func TestWarpSteps(t *testing.T) {
	id := Identity(100, 50)
	for _, tc := range []struct {
		name  string
		a     Affine
		box   [4]float64
		want  [4]float64
		area  float64
		valid [4]float64
	}{
		{"quarter turn", id.Then(rot90(100, 50)), [4]float64{10, 5, 20, 15}, [4]float64{35, 10, 45, 20}, 100, [4]float64{0, 0, 50, 100}},
		{"turn then flip", id.Then(rot90(100, 50)).Then(Same(50, 100).FlipX()), [4]float64{10, 5, 20, 15}, [4]float64{5, 10, 15, 20}, 100, [4]float64{0, 0, 50, 100}},
		{"crop then turn", id.Then(CropStep(image.Rect(10, 5, 50, 25), 80, 40)).Then(rot90(80, 40)),
			[4]float64{10, 5, 20, 15}, [4]float64{20, 0, 40, 20}, 400, [4]float64{0, 0, 40, 80}},
		{"turn clips", id.Then(rot90(100, 50)).Then(Step{SX: 1, TX: -40, SY: 1, W: 50, H: 100}), [4]float64{10, 5, 20, 15}, [4]float64{0, 10, 5, 20}, 100, [4]float64{0, 0, 10, 100}},
		{"rotation 45", id.Then(WarpStep(rotation(45, 50, 25), 1, 100, 50)), [4]float64{40, 15, 60, 35},
			[4]float64{50 - 10*math.Sqrt2, 25 - 10*math.Sqrt2, 50 + 10*math.Sqrt2, 25 + 10*math.Sqrt2}, 400, [4]float64{0, 0, 100, 50}},
		// The crop cuts the box before the rotation maps its corners: the
		// bounds of the cut box's corners, not of the whole box's, and the
		// cut box's area (20×10) is the filter's reference.
		{"crop cuts before the turn", id.Then(CropStep(image.Rect(10, 5, 50, 25), 40, 20)).Then(WarpStep(rotation(45, 20, 10), 1, 40, 20)),
			[4]float64{0, 0, 30, 15}, [4]float64{20 - 10*math.Sqrt2, 0, 20 + 5*math.Sqrt2, 10}, 200, [4]float64{0, 0, 40, 20}},
		{"scaled", id.Then(WarpStep(Matrix{2, 0, 0, 0, 2, 0, 0, 0, 1}, 4, 200, 100)), [4]float64{1, 1, 2, 3}, [4]float64{2, 2, 4, 6}, 8, [4]float64{0, 0, 200, 100}},
		{"perspective", id.Then(WarpStep(Matrix{1, 0, 0, 0, 1, 0, 0.01, 0, 1}, 1, 100, 50)), [4]float64{0, 0, 10, 10},
			[4]float64{0, 0, 10 / 1.1, 10}, 100, [4]float64{0, 0, 50, 50}},
		{"behind the horizon", id.Then(WarpStep(Matrix{1, 0, 0, 0, 1, 0, -0.05, 0, 1}, 1, 100, 50)), [4]float64{10, 0, 30, 10},
			[4]float64{}, 0, [4]float64{0, 0, 100, 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, area := tc.a.Box(tc.box)
			for k := range got {
				if math.Abs(got[k]-tc.want[k]) > 1e-9 || math.Abs(tc.a.Valid[k]-tc.valid[k]) > 1e-9 {
					t.Fatalf("box %v, valid %v; want %v, %v", got, tc.a.Valid, tc.want, tc.valid)
				}
			}
			if math.Abs(area-tc.area) > 1e-9 {
				t.Fatalf("area %v, want %v", area, tc.area)
			}
		})
	}
}

// rotation is deg degrees clockwise (y down) about (cx, cy).
func rotation(deg, cx, cy float64) Matrix {
	c, s := math.Cos(deg*math.Pi/180), math.Sin(deg*math.Pi/180)
	return AxisMatrix(1, cx, 1, cy).Mul(Matrix{c, -s, 0, s, c, 0, 0, 0, 1}).Mul(AxisMatrix(1, -cx, 1, -cy))
}

// A point is inside where every stage showed it: a corner a crop cut away
// stays outside though a later rotation brings its place into view.
func TestWarpPointVisibility(t *testing.T) {
	id := Identity(40, 40)
	crop := id.Then(CropStep(image.Rect(10, 10, 30, 30), 20, 20))
	turned := crop.Then(WarpStep(rotation(45, 10, 10), 1, 20, 20))
	for _, tc := range []struct {
		name   string
		a      Affine
		x, y   float64
		wx, wy float64
		inside bool
	}{
		{"centre", turned, 20, 20, 10, 10, true},
		{"cropped away, turned into view", turned, 8, 20, 10 - 12/math.Sqrt2, 10 - 12/math.Sqrt2, false},
		{"turned out of view", turned, 11, 11, 10, 10 - 9*math.Sqrt2, false},
		{"kept corner turned into view", turned, 25, 20, 10 + 5/math.Sqrt2, 10 + 5/math.Sqrt2, true},
		{"mirrored", id.Then(Same(40, 40).FlipX()).Then(WarpStep(rotation(90, 20, 20), 1, 40, 40)), 10, 20, 20, 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, y, in := tc.a.Point(tc.x, tc.y)
			if math.Abs(x-tc.wx) > 1e-9 || math.Abs(y-tc.wy) > 1e-9 || in != tc.inside {
				t.Fatalf("(%v, %v) -> (%v, %v, %v), want (%v, %v, %v)", tc.x, tc.y, x, y, in, tc.wx, tc.wy, tc.inside)
			}
		})
	}
	if !id.Then(Same(40, 40).FlipX()).Then(rot90(40, 40)).Mirrored() || id.Then(rot90(40, 40)).Mirrored() {
		t.Fatal("a flip then a turn mirrors; a turn alone does not")
	}
}

// Matrix algebra: Mul composes, Inverse undoes, Centred is torchvision's
// warp about the image centre, and Step.Then keeps what the first step's
// frame cut away out of view.
func TestMatrix(t *testing.T) {
	m := Matrix{1.2, 0.3, -4, -0.2, 0.9, 7, 0.001, -0.002, 1}
	inv, ok := m.Inverse()
	if !ok {
		t.Fatal("invertible")
	}
	for _, p := range [][2]float64{{0, 0}, {13, -7}, {100, 50}} {
		x, y, _ := m.Apply(p[0], p[1])
		bx, by, _ := inv.Apply(x, y)
		if math.Abs(bx-p[0]) > 1e-9 || math.Abs(by-p[1]) > 1e-9 {
			t.Fatalf("inverse maps %v back to (%v, %v)", p, bx, by)
		}
		x2, y2, _ := m.Mul(inv).Apply(p[0], p[1])
		if math.Abs(x2-p[0]) > 1e-9 || math.Abs(y2-p[1]) > 1e-9 {
			t.Fatalf("m·m⁻¹ moves %v to (%v, %v)", p, x2, y2)
		}
	}
	if _, ok := (Matrix{1, 2, 0, 2, 4, 0, 0, 0, 1}).Inverse(); ok {
		t.Fatal("a singular matrix has no inverse")
	}
	// An inverse that samples input ctr + (p − ctr) shifted by (-3, 2)
	// moves the image by (3, -2).
	c := Centred([6]float64{1, 0, -3, 0, 1, 2}, 40, 30)
	if x, y, _ := c.Apply(20, 15); math.Abs(x-23) > 1e-12 || math.Abs(y-13) > 1e-12 {
		t.Fatalf("centre lands at (%v, %v), want (23, 13)", x, y)
	}
	// A shift by 30 then back by 30 in a 40-wide frame: what went out of
	// the frame does not come back.
	s := Step{SX: 1, TX: 30, SY: 1, W: 40, H: 10}.Then(Step{SX: 1, TX: -30, SY: 1, W: 40, H: 10})
	a := Identity(40, 10).Then(s)
	if _, _, in := a.Point(5, 5); !in {
		t.Fatal("a point that stayed in the frame is shown")
	}
	if _, _, in := a.Point(15, 5); in {
		t.Fatal("a point shifted out of the frame is not shown after shifting back")
	}
}

// TestAffineKeepsCentre: a CentreCropper step's window keeps the boxes whose centre,
// where the box is before the step (clipped), lies strictly inside it, and
// later steps carry the windows.
func TestAffineKeepsCentre(t *testing.T) {
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
		if got := a.KeepsCentre(c.box); got != c.want {
			t.Errorf("box %v: kept %v, want %v", c.box, got, c.want)
		}
	}
	if !Identity(10, 10).KeepsCentre([4]float64{100, 100, 200, 200}) {
		t.Error("no window dropped a box")
	}
}
