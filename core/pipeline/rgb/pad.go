package rgb

import (
	"encoding/json"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// padRGB is FFCV-SSL's PadRGBImageDecoder: each image whole, at the
// top-left of an output as high as the file's highest image and as wide as
// its widest, zeros elsewhere. Pixels keep their coordinates, so targets
// that follow it keep theirs.
type padRGB struct{ w, h int }

func newPadRGB(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	if err := pipeline.Parse(raw, &pipeline.NoArgs{}); err != nil {
		return nil, err
	}
	if err := pipeline.NeedType(env, field.RGBImage); err != nil {
		return nil, err
	}
	d := &padRGB{}
	for i := uint64(0); i < env.Reader.NumSamples(); i++ {
		col, err := env.Reader.Column(i, env.Field)
		if err != nil {
			return nil, err
		}
		im := imageOf(col)
		d.w, d.h = max(d.w, im.w), max(d.h, im.h)
	}
	return d, nil
}

func (d *padRGB) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{d.h, d.w, 3}, DType: "|u1"}, nil
}

func (d *padRGB) Place(_ *pipeline.Ctx, _, _, _ int) (pipeline.Step, error) {
	return pipeline.Step{SX: 1, SY: 1, W: d.w, H: d.h}, nil
}

// padBuf is a worker's buffer for a decoded JPEG before padding.
type padBuf struct{ b []byte }

func (d *padRGB) Run(c *pipeline.Ctx, _ int, _, out []byte) error {
	im := imageOf(c.Col)
	if im.w > d.w || im.h > d.h {
		return fmt.Errorf("%w: image is %dx%d, larger than the file's largest, %dx%d", field.ErrData, im.w, im.h, d.w, d.h)
	}
	src := c.Heap
	if im.mode == field.ModeJPEG {
		buf := c.State("pad", func() any { return &padBuf{} }).(*padBuf)
		buf.b = pipeline.Grow(buf.b, im.w*im.h*3)
		if err := decodeWhole(c, im, buf.b); err != nil {
			return err
		}
		src = buf.b
	} else if len(src) != im.w*im.h*3 {
		return fmt.Errorf("%w: raw image has %d bytes, expected %d", field.ErrData, len(src), im.w*im.h*3)
	}
	imgproc.PadTopLeft(out, d.w, d.h, src, im.w*3, im.w, im.h, 3)
	return nil
}
