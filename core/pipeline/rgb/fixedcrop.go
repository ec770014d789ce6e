package rgb

import (
	"encoding/json"
	"fmt"
	"image"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// fixedCrop is FFCV-SSL's CenterCrop and CornerCrop on decoded images: a
// square of side int(ratio·min(h, w)) at the centre or a corner, area-resized
// to size.
type fixedCrop struct {
	oh, ow int
	ratio  float64
	corner string
	in     pipeline.Spec
}

func newFixedCrop(corner bool) pipeline.Factory {
	return func(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
		var a struct {
			Size   [2]int  `json:"size"`
			Ratio  float64 `json:"ratio"`
			Corner string  `json:"corner"`
		}
		if err := pipeline.Parse(raw, &a); err != nil {
			return nil, err
		}
		if a.Size[0] < 1 || a.Size[1] < 1 {
			return nil, fmt.Errorf("output size %v must be positive", a.Size)
		}
		if !(a.Ratio > 0 && a.Ratio <= 1) {
			return nil, fmt.Errorf("ratio %v must be in (0, 1]", a.Ratio)
		}
		switch {
		case !corner && a.Corner != "":
			return nil, fmt.Errorf("a centre crop takes no corner")
		case corner:
			switch a.Corner {
			case "top_left", "top_right", "bottom_left", "bottom_right":
			default:
				return nil, fmt.Errorf("corner %q must be top_left, top_right, bottom_left or bottom_right", a.Corner)
			}
		}
		return &fixedCrop{oh: a.Size[0], ow: a.Size[1], ratio: a.Ratio, corner: a.Corner}, nil
	}
}

func (t *fixedCrop) Out(in pipeline.Spec) (pipeline.Spec, error) {
	t.in = in
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	return pipeline.Spec{Shape: []int{t.oh, t.ow, in.Shape[2]}, DType: "|u1"}, nil
}

func (t *fixedCrop) rect(w, h int) image.Rectangle {
	side := max(1, int(t.ratio*float64(min(w, h))))
	top, left := (h-side)/2, (w-side)/2
	switch t.corner {
	case "top_left":
		top, left = 0, 0
	case "top_right":
		top, left = 0, w-side
	case "bottom_left":
		top, left = h-side, 0
	case "bottom_right":
		top, left = h-side, w-side
	}
	return image.Rect(left, top, left+side, top+side)
}

func (t *fixedCrop) Place(_ *pipeline.Ctx, _, w, h int) (pipeline.Step, error) {
	return pipeline.CropStep(t.rect(w, h), t.ow, t.oh), nil
}

func (t *fixedCrop) Run(c *pipeline.Ctx, _ int, in, out []byte) error {
	h, w, ch := t.in.Shape[0], t.in.Shape[1], t.in.Shape[2]
	crop := t.rect(w, h)
	src := imgproc.SubRect(in, w*ch, ch, crop)
	resizerOf(c).ResizeArea(out, t.ow, t.oh, src, crop.Dx(), crop.Dy(), w*ch, ch)
	return nil
}
