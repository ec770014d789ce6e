package transform

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// blend mixes the image with black (brightness), its mean grey level
// (contrast) or its greyscale version (saturation) by a factor drawn from
// U(max(0, 1-m), 1+m), with probability p; values are clipped to [0, 255]
// and truncated as numpy's astype(uint8) does.
type blend struct {
	pipeline.SameImage
	pipeline.PhotometricOp
	kind string
	m, p float64
	spec pipeline.Spec
}

func newBlend(kind string) pipeline.Factory {
	return func(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
		var a struct {
			Magnitude float64 `json:"magnitude"`
			P         float64 `json:"p"`
		}
		if err := pipeline.Parse(raw, &a); err != nil {
			return nil, err
		}
		if !(a.Magnitude >= 0) || math.IsInf(a.Magnitude, 0) {
			return nil, fmt.Errorf("magnitude %v must be finite and not negative", a.Magnitude)
		}
		if err := pipeline.Prob("p", a.P); err != nil {
			return nil, err
		}
		return &blend{kind: kind, m: a.Magnitude, p: a.P}, nil
	}
}

func (b *blend) Out(in pipeline.Spec) (pipeline.Spec, error) {
	b.spec = in
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	if b.kind != "brightness" && in.Shape[2] != 3 {
		return in, fmt.Errorf("%s needs RGB images", b.kind)
	}
	return in, nil
}

func gray(r, g, b byte) float64 {
	return float64(0.299*float64(r)) + float64(0.587*float64(g)) + float64(0.114*float64(b))
}

// blendGray is FFCV's grey level for contrast and saturation: its luma
// constants, truncated to uint8 as its astype does.
func blendGray(r, g, b byte) float64 {
	return float64(byte(float64(0.2989*float64(r)) + float64(0.587*float64(g)) + float64(0.114*float64(b))))
}

func (b *blend) Run(c *pipeline.Ctx, op int, in, out []byte) error {
	pipeline.CopyIfNeeded(out, in)
	r := c.Rand(op)
	if r.Float64() >= b.p {
		return nil
	}
	lo := max(0, 1-b.m)
	f := lo + float64(r.Float64()*(1+b.m-lo))
	switch b.kind {
	case "brightness":
		for i, v := range out {
			out[i] = clipU8(float64(v) * f)
		}
	case "contrast":
		var sum float64
		n := len(out) / 3
		for i := 0; i < n; i++ {
			sum += blendGray(out[3*i], out[3*i+1], out[3*i+2])
		}
		mean := sum / float64(max(n, 1))
		for i, v := range out {
			out[i] = clipU8(float64(f*float64(v)) + float64((1-f)*mean))
		}
	case "saturation":
		for i := 0; i+2 < len(out); i += 3 {
			g := blendGray(out[i], out[i+1], out[i+2])
			for k := 0; k < 3; k++ {
				out[i+k] = clipU8(float64(f*float64(out[i+k])) + float64((1-f)*g))
			}
		}
	}
	return nil
}

// grayscale replaces RGB by its luma (ITU-R 601) in all channels, with probability p.
type grayscale struct {
	pipeline.SameImage
	pipeline.PhotometricOp
	p float64
}

func newGrayscale(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		P float64 `json:"p"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if err := pipeline.Prob("gray_prob", a.P); err != nil {
		return nil, err
	}
	return &grayscale{p: a.P}, nil
}

func (g *grayscale) Out(in pipeline.Spec) (pipeline.Spec, error) {
	if err := pipeline.NeedImage(in); err != nil || in.Shape[2] != 3 {
		return in, fmt.Errorf("needs RGB images, got %v %s", in.Shape, field.DTypeName(in.DType))
	}
	return in, nil
}

func (g *grayscale) draw(c *pipeline.Ctx, key int) bool { return c.Rand(key).Float64() < g.p }

// Reports: 0 when the image was turned grey, 1 otherwise (FFCV-SSL's
// convention).
func (g *grayscale) Reports() int { return 1 }

func (g *grayscale) Report(c *pipeline.Ctx, key int, dst []float32) { dst[0] = b2f(!g.draw(c, key)) }

func (g *grayscale) Run(c *pipeline.Ctx, op int, in, out []byte) error {
	pipeline.CopyIfNeeded(out, in)
	if !g.draw(c, op) {
		return nil
	}
	for i := 0; i+2 < len(out); i += 3 {
		v := clipU8(gray(out[i], out[i+1], out[i+2]))
		out[i], out[i+1], out[i+2] = v, v, v
	}
	return nil
}

// solarize inverts the pixels at or above threshold, with probability p.
type solarize struct {
	pipeline.SameImage
	pipeline.PhotometricOp
	threshold int
	p         float64
}

func newSolarize(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		Threshold int     `json:"threshold"`
		P         float64 `json:"p"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if err := pipeline.Prob("solarization_prob", a.P); err != nil {
		return nil, err
	}
	if a.Threshold < 0 || a.Threshold > 255 {
		return nil, fmt.Errorf("threshold %d must be in [0, 255]", a.Threshold)
	}
	return &solarize{threshold: a.Threshold, p: a.P}, nil
}

func (s *solarize) draw(c *pipeline.Ctx, key int) bool { return c.Rand(key).Float64() < s.p }

// Reports: 1 when the image was solarized, 0 otherwise.
func (s *solarize) Reports() int { return 1 }

func (s *solarize) Report(c *pipeline.Ctx, key int, dst []float32) { dst[0] = b2f(s.draw(c, key)) }

func (s *solarize) Run(c *pipeline.Ctx, op int, in, out []byte) error {
	pipeline.CopyIfNeeded(out, in)
	if !s.draw(c, op) {
		return nil
	}
	for i, v := range out {
		if int(v) >= s.threshold {
			out[i] = 255 - v
		}
	}
	return nil
}
