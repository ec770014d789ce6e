package ssl

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// FFCV-SSL's GaussianBlur: with probability p, torchvision's gaussian_blur
// (imgproc.Blurrer) with a sigma drawn from U(sigma).

type gaussianBlur struct {
	pipeline.SameImage
	pipeline.PhotometricOp
	p      float64
	k      int
	lo, hi float64
	spec   pipeline.Spec
}

func newGaussianBlur(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		P          float64         `json:"p"`
		KernelSize int             `json:"kernel_size"`
		Sigma      json.RawMessage `json:"sigma"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if err := pipeline.Prob("blur_prob", a.P); err != nil {
		return nil, err
	}
	if a.KernelSize < 1 || a.KernelSize%2 == 0 {
		return nil, fmt.Errorf("kernel_size %d must be odd and positive", a.KernelSize)
	}
	// sigma: one number, or torchvision's (min, max).
	var s [2]float64
	if json.Unmarshal(a.Sigma, &s[0]) == nil {
		s[1] = s[0]
	} else if json.Unmarshal(a.Sigma, &s) != nil {
		s = [2]float64{}
	}
	if !(s[0] > 0 && s[0] <= s[1]) || math.IsInf(s[1], 0) {
		return nil, fmt.Errorf("sigma %s must be a positive number or (min, max) pair", a.Sigma)
	}
	return &gaussianBlur{p: a.P, k: a.KernelSize, lo: s[0], hi: s[1]}, nil
}

func (g *gaussianBlur) Out(in pipeline.Spec) (pipeline.Spec, error) {
	g.spec = in
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	if r := g.k / 2; r >= in.Shape[0] || r >= in.Shape[1] {
		return in, fmt.Errorf("kernel_size %d needs images larger than %dx%d for reflect padding", g.k, in.Shape[0], in.Shape[1])
	}
	return in, nil
}

// draw is the blur's draw: whether it applies and its sigma.
func (g *gaussianBlur) draw(c *pipeline.Ctx, key int) (bool, float64) {
	r := c.Rand(key)
	apply := r.Float64() < g.p
	return apply, g.lo + float64(r.Float64()*(g.hi-g.lo))
}

// Reports: the sigma of the blur, 0 when it did not apply.
func (g *gaussianBlur) Reports() int { return 1 }

func (g *gaussianBlur) Report(c *pipeline.Ctx, key int, dst []float32) {
	dst[0] = 0
	if apply, s := g.draw(c, key); apply {
		dst[0] = float32(s)
	}
}

func (g *gaussianBlur) Run(c *pipeline.Ctx, op int, in, out []byte) error {
	pipeline.CopyIfNeeded(out, in)
	apply, sigma := g.draw(c, op)
	if !apply {
		return nil
	}
	blur := c.State("blur", func() any { return new(imgproc.Blurrer) }).(*imgproc.Blurrer)
	blur.GaussianBlur(out, g.spec.Shape[0], g.spec.Shape[1], g.spec.Shape[2], g.k, sigma)
	return nil
}
