package ssl

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// rotate is FFCV-SSL's Rotate with torchvision's rotation: with probability
// p, an angle drawn from U(-angle, angle) radians.
type rotate struct {
	p, angle float64
	bilinear bool
	fill     []float32
	spec     pipeline.Spec
}

func newRotate(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		P             float64   `json:"p"`
		Angle         float64   `json:"angle"`
		Interpolation string    `json:"interpolation"`
		Fill          []float32 `json:"fill"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if err := pipeline.Prob("rotate_prob", a.P); err != nil {
		return nil, err
	}
	if !(a.Angle >= 0) || math.IsInf(a.Angle, 0) {
		return nil, fmt.Errorf("angle %v must be finite and not negative", a.Angle)
	}
	bil, err := pipeline.ParseInterp(a.Interpolation)
	if err != nil {
		return nil, err
	}
	return &rotate{p: a.P, angle: a.Angle, bilinear: bil, fill: a.Fill}, nil
}

func (t *rotate) Out(in pipeline.Spec) (pipeline.Spec, error) {
	t.spec = in
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	return in, pipeline.CheckFill(t.fill, in.Shape[2])
}

// draw is the rotation's draw: whether it applies and its angle (radians).
func (t *rotate) draw(c *pipeline.Ctx, key int) (bool, float64) {
	r := c.Rand(key)
	apply := r.Float64() < t.p
	return apply, -t.angle + float64(r.Float64()*2*t.angle)
}

// Reports: the angle in radians, 0 when the rotation did not apply.
func (t *rotate) Reports() int { return 1 }

func (t *rotate) Report(c *pipeline.Ctx, key int, dst []float32) {
	dst[0] = 0
	if apply, th := t.draw(c, key); apply {
		dst[0] = float32(th)
	}
}

// Place is the rotation about the image's centre that Run's warp makes
// (torchvision's), or nothing where it did not apply.
func (t *rotate) Place(c *pipeline.Ctx, key, w, h int) (pipeline.Step, error) {
	apply, theta := t.draw(c, key)
	if !apply || theta == 0 {
		return pipeline.Same(w, h), nil
	}
	m := pipeline.Centred(imgproc.InvAffine(0, 0, -theta*180/math.Pi, 0, 0, 1, 0, 0), w, h)
	return pipeline.WarpStep(m, 1, w, h), nil
}

func (t *rotate) Run(c *pipeline.Ctx, op int, in, out []byte) error {
	apply, theta := t.draw(c, op)
	if !apply {
		copy(out, in)
		return nil
	}
	h, w, ch := t.spec.Shape[0], t.spec.Shape[1], t.spec.Shape[2]
	imgproc.Rotate(out, in, h, w, ch, theta*180/math.Pi, t.bilinear, t.fill)
	return nil
}
