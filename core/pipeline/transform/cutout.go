package transform

import (
	"encoding/json"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// cutout fills a random crop_size square that lies inside the image.
type cutout struct {
	pipeline.SameImage
	pipeline.PhotometricOp
	size int
	fill []byte
	spec pipeline.Spec
}

func newCutout(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		Size int   `json:"size"`
		Fill []int `json:"fill"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.Size < 1 {
		return nil, fmt.Errorf("crop_size %d must be positive", a.Size)
	}
	fill, err := pipeline.Bytes("fill", a.Fill)
	if err != nil {
		return nil, err
	}
	return &cutout{size: a.Size, fill: fill}, nil
}

func (t *cutout) Out(in pipeline.Spec) (pipeline.Spec, error) {
	t.spec = in
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	if t.size > in.Shape[0] || t.size > in.Shape[1] {
		return in, fmt.Errorf("crop_size %d is larger than the %dx%d image", t.size, in.Shape[0], in.Shape[1])
	}
	if len(t.fill) != in.Shape[2] {
		return in, fmt.Errorf("fill has %d values for %d channels", len(t.fill), in.Shape[2])
	}
	return in, nil
}

func (t *cutout) Run(c *pipeline.Ctx, op int, in, out []byte) error {
	pipeline.CopyIfNeeded(out, in)
	h, w, ch := t.spec.Shape[0], t.spec.Shape[1], t.spec.Shape[2]
	r := c.Rand(op)
	y0, x0 := r.IntN(h-t.size+1), r.IntN(w-t.size+1)
	for y := y0; y < y0+t.size; y++ {
		for x := x0; x < x0+t.size; x++ {
			copy(out[(y*w+x)*ch:(y*w+x+1)*ch], t.fill)
		}
	}
	return nil
}
