package rgb

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// yoloMixUp is YOLO's MixUp (Ultralytics' MixUp): with probability p the
// image is blended with a partner drawn uniformly from the file, run
// through the same operations before it with its own draws (a second
// mosaic, warped its own way), as own·r + partner·(1-r) truncated to
// uint8, r ~ Beta(32, 32). Targets get both samples' rows (a
// pipeline.Blender). Unlike the batch mixups (image_mixup), it blends
// whole samples before batching, with their boxes.
type yoloMixUp struct {
	p float64
	n uint64 // samples to draw partners from
}

func newYoloMixUp(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		P float64 `json:"p"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if err := pipeline.Prob("p", a.P); err != nil {
		return nil, err
	}
	if err := pipeline.NeedFile(env); err != nil {
		return nil, err
	}
	if env.Reader.NumSamples() == 0 {
		return nil, fmt.Errorf("the file has no samples to draw partners from")
	}
	return &yoloMixUp{p: a.P, n: env.Reader.NumSamples()}, nil
}

func (m *yoloMixUp) Out(in pipeline.Spec) (pipeline.Spec, error) { return in, pipeline.NeedImage(in) }

// draw is the op's draw for the sample in c: whether it applies, the
// partner and the ratio.
func (m *yoloMixUp) draw(r *rand.Rand) (partner uint64, ratio float64, ok bool) {
	if r.Float64() >= m.p {
		return 0, 0, false
	}
	partner = r.Uint64N(m.n)
	return partner, pipeline.Beta(r, 32), true
}

func (m *yoloMixUp) Partner(c *pipeline.Ctx, key int) (uint64, bool) {
	partner, _, ok := m.draw(c.Rand(key))
	return partner, ok
}

func (m *yoloMixUp) Blend(c *pipeline.Ctx, key int, own, other, out []byte) error {
	_, r, _ := m.draw(c.Rand(key))
	// The conversions round each product, as numpy does: arm64 would
	// otherwise fuse them into one multiply-add.
	for i, a := range own {
		out[i] = byte(float64(float64(a)*r) + float64(float64(other[i])*(1-r)))
	}
	return nil
}

// Run is the op without its partner (Build runs it as a blend stage).
func (m *yoloMixUp) Run(*pipeline.Ctx, int, []byte, []byte) error {
	return fmt.Errorf("MixUp runs only in a program, after the operations its partner goes through")
}

func (m *yoloMixUp) Reports() int { return 3 }

// Report writes (applied, partner, ratio); partner and ratio are 0 where
// it does not apply. The partner is exact below 2^24 samples (float32).
func (m *yoloMixUp) Report(c *pipeline.Ctx, key int, dst []float32) {
	partner, r, ok := m.draw(c.Rand(key))
	dst[0], dst[1], dst[2] = 0, 0, 0
	if ok {
		dst[0], dst[1], dst[2] = 1, float32(partner), float32(r)
	}
}
