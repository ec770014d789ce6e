package transform

import (
	"encoding/json"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

type flip struct {
	pipeline.SameImage
	horizontal bool
	p          float64
	spec       pipeline.Spec
}

func newFlip(horizontal bool) pipeline.Factory {
	return func(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
		var a struct {
			P float64 `json:"p"`
		}
		if err := pipeline.Parse(raw, &a); err != nil {
			return nil, err
		}
		if err := pipeline.Prob("flip_prob", a.P); err != nil {
			return nil, err
		}
		f := flip{horizontal: horizontal, p: a.P}
		if horizontal {
			return &hflip{f}, nil
		}
		return &f, nil
	}
}

// hflip is the horizontal flip, which a crop decoder before it may do
// itself (see pipeline.Fuser).
type hflip struct{ flip }

func (f *hflip) Flips(c *pipeline.Ctx, key int) bool { return f.draw(c, key) }

func (f *flip) Out(in pipeline.Spec) (pipeline.Spec, error) {
	f.spec = in
	return in, pipeline.NeedImage(in)
}

// draw is whether the sample is flipped: Run, Place and Report all read it.
func (f *flip) draw(c *pipeline.Ctx, op int) bool { return c.Rand(op).Float64() < f.p }

// Reports: 1 when the sample is flipped, 0 otherwise.
func (f *flip) Reports() int { return 1 }

func (f *flip) Report(c *pipeline.Ctx, key int, dst []float32) { dst[0] = b2f(f.draw(c, key)) }

func (f *flip) Place(c *pipeline.Ctx, key, w, h int) (pipeline.Step, error) {
	s := pipeline.Same(w, h)
	switch {
	case !f.draw(c, key):
	case f.horizontal:
		s = s.FlipX()
	default:
		s = s.FlipY()
	}
	return s, nil
}

func (f *flip) Run(c *pipeline.Ctx, op int, in, out []byte) error {
	pipeline.CopyIfNeeded(out, in)
	if !f.draw(c, op) {
		return nil
	}
	h, w, ch := f.spec.Shape[0], f.spec.Shape[1], f.spec.Shape[2]
	if f.horizontal {
		imgproc.FlipHorizontal(out, w, h, ch)
		return nil
	}
	stride := w * ch
	tmp := make([]byte, stride)
	for t, b := 0, h-1; t < b; t, b = t+1, b-1 {
		copy(tmp, out[t*stride:(t+1)*stride])
		copy(out[t*stride:(t+1)*stride], out[b*stride:(b+1)*stride])
		copy(out[b*stride:(b+1)*stride], tmp)
	}
	return nil
}
