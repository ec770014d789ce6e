package transform

import (
	"encoding/json"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// Windows of the image padded with a fill: a shift, a random crop.

// translate pads by `padding` with fill and takes a random window of the
// original size: the image moves by up to ±padding pixels.
type translate struct {
	padding int
	fill    []byte
	spec    pipeline.Spec
}

func newTranslate(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		Padding int   `json:"padding"`
		Fill    []int `json:"fill"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.Padding < 0 {
		return nil, fmt.Errorf("padding %d must not be negative", a.Padding)
	}
	fill, err := pipeline.Bytes("fill", a.Fill)
	if err != nil {
		return nil, err
	}
	return &translate{padding: a.Padding, fill: fill}, nil
}

// draw is the sample's shift: Run, Place and Report all read it.
func (t *translate) draw(c *pipeline.Ctx, op int) (dy, dx int) {
	r := c.Rand(op)
	dy = r.IntN(2*t.padding+1) - t.padding
	return dy, r.IntN(2*t.padding+1) - t.padding
}

func (t *translate) Out(in pipeline.Spec) (pipeline.Spec, error) {
	t.spec = in
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	if len(t.fill) != in.Shape[2] {
		return in, fmt.Errorf("fill has %d values for %d channels", len(t.fill), in.Shape[2])
	}
	return in, nil
}

// Reports: FFCV-SSL's (dy + padding, dx + padding), in [0, 2·padding],
// for the shift (dy, dx) drawn: output pixel (y, x) is input pixel
// (y + dy, x + dx), or the window's corner in the padded image.
func (t *translate) Reports() int { return 2 }

func (t *translate) Report(c *pipeline.Ctx, key int, dst []float32) {
	dy, dx := t.draw(c, key)
	dst[0], dst[1] = float32(dy+t.padding), float32(dx+t.padding)
}

func (t *translate) Place(c *pipeline.Ctx, key, w, h int) (pipeline.Step, error) {
	dy, dx := t.draw(c, key)
	return pipeline.Step{SX: 1, TX: -float64(dx), SY: 1, TY: -float64(dy), W: w, H: h}, nil
}

func (t *translate) Run(c *pipeline.Ctx, op int, in, out []byte) error {
	h, w, ch := t.spec.Shape[0], t.spec.Shape[1], t.spec.Shape[2]
	dy, dx := t.draw(c, op)
	// out[y][x] = in[y+dy][x+dx] where inside, fill elsewhere.
	for y := 0; y < h; y++ {
		sy := y + dy
		row := out[y*w*ch : (y+1)*w*ch]
		for x := 0; x < w; x++ {
			sx := x + dx
			if sy < 0 || sy >= h || sx < 0 || sx >= w {
				copy(row[x*ch:(x+1)*ch], t.fill)
			} else {
				copy(row[x*ch:(x+1)*ch], in[(sy*w+sx)*ch:(sy*w+sx+1)*ch])
			}
		}
	}
	return nil
}

// randomCrop pads by padding (zeros) then takes a random size window, as
// torchvision's RandomCrop(size, padding) does.
type randomCrop struct {
	h, w, padding int
	in            pipeline.Spec
}

func newRandomCrop(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		Size    [2]int `json:"size"`
		Padding int    `json:"padding"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.Size[0] < 1 || a.Size[1] < 1 {
		return nil, fmt.Errorf("size %v must be positive", a.Size)
	}
	if a.Padding < 0 {
		return nil, fmt.Errorf("padding %d must not be negative", a.Padding)
	}
	return &randomCrop{h: a.Size[0], w: a.Size[1], padding: a.Padding}, nil
}

func (t *randomCrop) Out(in pipeline.Spec) (pipeline.Spec, error) {
	t.in = in
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	if t.h > in.Shape[0]+2*t.padding || t.w > in.Shape[1]+2*t.padding {
		return in, fmt.Errorf("crop %dx%d is larger than the padded %dx%d image", t.h, t.w, in.Shape[0]+2*t.padding, in.Shape[1]+2*t.padding)
	}
	return pipeline.Spec{Shape: []int{t.h, t.w, in.Shape[2]}, DType: "|u1"}, nil
}

// draw is the window's corner in a w×h input: Run and Place both read it.
func (t *randomCrop) draw(c *pipeline.Ctx, op, w, h int) (top, left int) {
	r := c.Rand(op)
	top = r.IntN(h+2*t.padding-t.h+1) - t.padding
	return top, r.IntN(w+2*t.padding-t.w+1) - t.padding
}

func (t *randomCrop) Place(c *pipeline.Ctx, key, w, h int) (pipeline.Step, error) {
	top, left := t.draw(c, key, w, h)
	return pipeline.Step{SX: 1, TX: -float64(left), SY: 1, TY: -float64(top), W: t.w, H: t.h}, nil
}

func (t *randomCrop) Run(c *pipeline.Ctx, op int, in, out []byte) error {
	h, w, ch := t.in.Shape[0], t.in.Shape[1], t.in.Shape[2]
	top, left := t.draw(c, op, w, h)
	for y := 0; y < t.h; y++ {
		sy := top + y
		for x := 0; x < t.w; x++ {
			sx := left + x
			d := out[(y*t.w+x)*ch : (y*t.w+x+1)*ch]
			if sy < 0 || sy >= h || sx < 0 || sx >= w {
				clear(d)
			} else {
				copy(d, in[(sy*w+sx)*ch:(sy*w+sx+1)*ch])
			}
		}
	}
	return nil
}
