package transform

import (
	"math"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// RandomPerspective's Place is where Run's pixels go, to a fraction of a
// pixel: on ramps (red 8·x, green 8·y of the pixel's column and row),
// which bilinear sampling keeps linear, each output pixel inside the image
// shows the ramp's value at the stored point Place maps back to its
// centre. Mapping by YOLO's M itself, without OpenCV's half-pixel
// convention, misses by up to (1 − 1/scale)/2 pixels: 8·0.17 levels.
func TestPerspectivePlaceFollowsPixels(t *testing.T) {
	const n = 30
	img := make([]byte, n*n*3)
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			img[(y*n+x)*3], img[(y*n+x)*3+1] = byte(8*x), byte(8*y)
		}
	}
	for _, args := range []map[string]any{
		{"degrees": 20, "scale": 0.5, "shear": 5, "translate": 0.1},
		{"degrees": 10, "scale": 0.4, "perspective": 0.002, "border": []int{-3, 2}},
	} {
		op := optest.NewOp(t, "random_perspective", args).(*perspective)
		out, err := op.Out(optest.ImgSpec(n, n, 3))
		if err != nil {
			t.Fatal(err)
		}
		oh, ow := out.Shape[0], out.Shape[1]
		checked := 0
		for pos := uint64(0); pos < 8; pos++ {
			c := pipeline.NewCtx()
			c.Seed, c.Pos = 7, pos
			dst := make([]byte, out.Bytes())
			if err := op.Run(c, 0, img, dst); err != nil {
				t.Fatal(err)
			}
			st, err := op.Place(c, 0, n, n)
			if err != nil || st.Warp == nil || st.W != ow || st.H != oh {
				t.Fatalf("Place %+v, %v", st, err)
			}
			inv, _ := st.Warp.M.Inverse()
			worst := 0.0
			for y := 0; y < oh; y++ {
				for x := 0; x < ow; x++ {
					sx, sy, ok := inv.Apply(float64(x)+0.5, float64(y)+0.5)
					// Inside, off the border's blend.
					if !ok || sx < 1 || sy < 1 || sx > n-1 || sy > n-1 {
						continue
					}
					checked++
					o := dst[(y*ow+x)*3:]
					worst = max(worst, math.Abs(float64(o[0])-8*(sx-0.5)), math.Abs(float64(o[1])-8*(sy-0.5)))
				}
			}
			// Rounding to a level (0.5) and OpenCV's coordinates, rounded to
			// 1/32 pixel in two fixed-point steps (under 8/32).
			if worst > 0.5+8.0/32 {
				t.Fatalf("%v, sample %d: a pixel is %.2f levels off the ramp at its mapped place", args, pos, worst)
			}
		}
		if checked < 1000 {
			t.Fatalf("%v: only %d pixels checked", args, checked)
		}
	}
}

// Inputs RandomPerspective cannot take are refused when the pipeline is
// built.
func TestPerspectiveBadInputs(t *testing.T) {
	optest.CheckBadInputs(t, []optest.BadInput{
		{Name: "random_perspective", Args: map[string]any{"border": []int{-5, 0}}, In: optest.ImgSpec(10, 20, 3), Want: "border [-5 0] makes a 20x10 image 20x0"},
		{Name: "random_perspective", Args: map[string]any{"fill": []int{1, 2}}, In: optest.ImgSpec(10, 20, 3), Want: "fill has 2 values for 3 channels"},
		{Name: "random_perspective", Args: map[string]any{}, In: pipeline.Spec{Shape: []int{4}, DType: "|u1"}, Want: "image"},
	})
}
