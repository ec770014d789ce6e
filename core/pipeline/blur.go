package pipeline

import (
	"encoding/json"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
)

// FFCV-SSL's GaussianBlur: with probability p, torchvision's gaussian_blur
// (imgproc.Blurrer) with a sigma drawn from U(sigma).

func init() { Register("gaussian_blur", newGaussianBlur) }

type gaussianBlur struct {
	SameImage
	PhotometricOp
	p      float64
	k      int
	lo, hi float64
	spec   Spec
}

func newGaussianBlur(_ Env, raw json.RawMessage) (Op, error) {
	var a struct {
		P          float64    `json:"p"`
		KernelSize int        `json:"kernel_size"`
		Sigma      [2]float64 `json:"sigma"`
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.KernelSize < 1 || a.KernelSize%2 == 0 {
		return nil, fmt.Errorf("kernel_size %d must be odd and positive", a.KernelSize)
	}
	if !(a.Sigma[0] > 0 && a.Sigma[0] <= a.Sigma[1]) {
		return nil, fmt.Errorf("sigma %v must be positive (min, max)", a.Sigma)
	}
	return &gaussianBlur{p: a.P, k: a.KernelSize, lo: a.Sigma[0], hi: a.Sigma[1]}, nil
}

func (g *gaussianBlur) Out(in Spec) (Spec, error) {
	g.spec = in
	if err := NeedImage(in); err != nil {
		return in, err
	}
	if r := g.k / 2; r >= in.Shape[0] || r >= in.Shape[1] {
		return in, fmt.Errorf("kernel_size %d needs images larger than %dx%d for reflect padding", g.k, in.Shape[0], in.Shape[1])
	}
	return in, nil
}

// draw is the blur's draw: whether it applies and its sigma.
func (g *gaussianBlur) draw(c *Ctx, key int) (bool, float64) {
	r := c.Rand(key)
	apply := r.Float64() < g.p
	return apply, g.lo + float64(r.Float64()*(g.hi-g.lo))
}

// Reports: the sigma of the blur, 0 when it did not apply.
func (g *gaussianBlur) Reports() int { return 1 }

func (g *gaussianBlur) Report(c *Ctx, key int, dst []float32) {
	dst[0] = 0
	if apply, s := g.draw(c, key); apply {
		dst[0] = float32(s)
	}
}

func (g *gaussianBlur) Run(c *Ctx, op int, in, out []byte) error {
	CopyIfNeeded(out, in)
	apply, sigma := g.draw(c, op)
	if !apply {
		return nil
	}
	blur := c.State("blur", func() any { return new(imgproc.Blurrer) }).(*imgproc.Blurrer)
	blur.GaussianBlur(out, g.spec.Shape[0], g.spec.Shape[1], g.spec.Shape[2], g.k, sigma)
	return nil
}
