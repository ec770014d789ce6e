package pipeline

import (
	"image"
	"math"
	"testing"
)

func TestPolygon(t *testing.T) {
	rot := func(deg float64) Matrix { // about (50, 50)
		c, s := math.Cos(deg*math.Pi/180), math.Sin(deg*math.Pi/180)
		return AxisMatrix(1, 50, 1, 50).Mul(Matrix{c, -s, 0, s, c, 0, 0, 0, 1}).Mul(AxisMatrix(1, -50, 1, -50))
	}
	diamond := []float64{50, 30, 70, 50, 50, 70, 30, 50}
	for _, tc := range []struct {
		name string
		a    Affine
		xy   []float64
		want []float64 // the points after
		box  [4]float64
	}{
		{"axis: clamped to the visible part", Identity(100, 100).Then(CropStep(image.Rect(20, 0, 120, 100), 100, 100)),
			[]float64{10, 10, 60, 10, 60, 60}, []float64{0, 10, 40, 10, 40, 60}, [4]float64{0, 10, 40, 60}},
		{"rotation: the box hugs the outline", Identity(100, 100).Then(WarpStep(rot(45), 1, 100, 100)),
			diamond, nil, [4]float64{50 - 10*math.Sqrt2, 50 - 10*math.Sqrt2, 50 + 10*math.Sqrt2, 50 + 10*math.Sqrt2}},
		// Only the points inside count (segment2box): polygons are resampled densely for this.
		{"warp: points outside are clamped to the box of those inside",
			Identity(100, 100).Then(WarpStep(AxisMatrix(1, 40, 1, 0), 1, 100, 100)),
			[]float64{40, 10, 80, 10, 80, 30, 40, 30}, []float64{80, 10, 80, 10, 80, 30, 80, 30}, [4]float64{80, 10, 80, 30}},
		{"warp: nothing shows", Identity(100, 100).Then(WarpStep(AxisMatrix(1, 500, 1, 0), 1, 100, 100)),
			[]float64{10, 10, 20, 10, 20, 20}, []float64{0, 0, 0, 0, 0, 0}, [4]float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xy := append([]float64(nil), tc.xy...)
			box := tc.a.Polygon(xy)
			for k := range box {
				if math.Abs(box[k]-tc.box[k]) > 1e-9 {
					t.Fatalf("box %v, want %v", box, tc.box)
				}
			}
			for k := range tc.want {
				if math.Abs(xy[k]-tc.want[k]) > 1e-9 {
					t.Fatalf("points %v, want %v", xy, tc.want)
				}
			}
		})
	}
	// Under a rotation the corners' box is larger than the polygon's.
	a := Identity(100, 100).Then(WarpStep(rot(30), 1, 100, 100))
	corners, _ := a.Box([4]float64{30, 30, 70, 70})
	poly := a.Polygon(append([]float64(nil), diamond...))
	if !((poly[2]-poly[0])*(poly[3]-poly[1]) < 0.6*(corners[2]-corners[0])*(corners[3]-corners[1])) {
		t.Fatalf("polygon box %v is not tighter than the corners' %v", poly, corners)
	}
}
