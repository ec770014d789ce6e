package rgb

import (
	"encoding/json"
	"fmt"
	"image"
	"math"
	"math/rand/v2"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// resizePad is the detection decoder: the whole image resized, aspect
// kept, to fit the output (times a scale drawn from [scale0, scale1],
// torchvision's scale jitter), at its top-left corner, the rest filled, as
// torchvision's detection models batch images. Nothing is cropped, so no
// box is lost; Geometry replays it for targets.
type resizePad struct {
	oh, ow int
	scale  [2]float64
	fill   [3]byte
}

func newResizePad(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		Size  [2]int     `json:"size"`
		Scale [2]float64 `json:"scale"`
		Fill  []int      `json:"fill"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if err := pipeline.Size("output_size", a.Size); err != nil {
		return nil, err
	}
	if !(a.Scale[0] > 0 && a.Scale[0] <= a.Scale[1] && a.Scale[1] <= 1) {
		return nil, fmt.Errorf("scale %v must be (min, max) with 0 < min <= max <= 1", a.Scale)
	}
	fill, err := pipeline.Bytes("fill", a.Fill)
	if err != nil {
		return nil, err
	}
	if len(fill) != 3 {
		return nil, fmt.Errorf("fill needs 3 values, got %d", len(fill))
	}
	if err := pipeline.NeedType(env, field.RGBImage); err != nil {
		return nil, err
	}
	d := &resizePad{oh: a.Size[0], ow: a.Size[1], scale: a.Scale}
	copy(d.fill[:], fill)
	return d, nil
}

func (d *resizePad) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{d.oh, d.ow, 3}, DType: "|u1"}, nil
}

// fit is the size a w×h image is resized to for this sample.
func (d *resizePad) fit(r *rand.Rand, w, h int) (int, int) {
	s := min(float64(d.ow)/float64(w), float64(d.oh)/float64(h))
	s *= d.scale[0] + r.Float64()*(d.scale[1]-d.scale[0])
	return max(1, min(d.ow, int(math.Round(float64(w)*s)))), max(1, min(d.oh, int(math.Round(float64(h)*s))))
}

func (d *resizePad) Place(c *pipeline.Ctx, key, w, h int) (pipeline.Step, error) {
	nw, nh := d.fit(c.Rand(key), w, h)
	return pipeline.Step{SX: float64(nw) / float64(w), SY: float64(nh) / float64(h), W: d.ow, H: d.oh}, nil
}

// resizePadBuf is a worker's buffer for the resized image before padding.
type resizePadBuf struct{ b []byte }

func (d *resizePad) Run(c *pipeline.Ctx, op int, _, out []byte) error {
	im := imageOf(c.Col)
	if im.w < 1 || im.h < 1 {
		return fmt.Errorf("%w: empty %dx%d image", field.ErrData, im.w, im.h)
	}
	nw, nh := d.fit(c.Rand(op), im.w, im.h)
	buf := c.State("resize_pad", func() any { return &resizePadBuf{} }).(*resizePadBuf)
	buf.b = pipeline.Grow(buf.b, nw*nh*3)
	if im.mode == field.ModeJPEG {
		dec := decoderOf(c)
		if err := dec.DecodeCropResizeFlip(c.Heap, image.Rect(0, 0, im.w, im.h), nw, nh, buf.b, false); err != nil {
			return fmt.Errorf("%w: %v", field.ErrData, err)
		}
		timed(c, dec)
	} else {
		if len(c.Heap) != im.w*im.h*3 {
			return fmt.Errorf("%w: raw image has %d bytes, expected %d", field.ErrData, len(c.Heap), im.w*im.h*3)
		}
		resizerOf(c).ResizeAreaFlip(buf.b, nw, nh, c.Heap, im.w, im.h, im.w*3, 3, false)
	}
	for y := 0; y < d.oh; y++ {
		row := out[y*d.ow*3 : (y+1)*d.ow*3]
		x0 := 0
		if y < nh {
			copy(row, buf.b[y*nw*3:(y+1)*nw*3])
			x0 = nw
		}
		imgproc.FillRGB(row[3*x0:], d.fill)
	}
	return nil
}
