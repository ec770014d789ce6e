package rgb

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// letterbox is YOLO's LetterBox: the image resized, aspect kept, by
// r = min(H/h, W/w) (at most 1 without scaleup) with cv2's INTER_LINEAR,
// to round(w·r)×round(h·r) (Python's round, half to even), then padded to
// H×W with fill, the padding split as Ultralytics splits it: left =
// round(dw/2 - 0.1), right = round(dw/2 + 0.1) (top and bottom alike), or
// all of it right and below without center. scale_fill stretches to H×W
// instead. Ultralytics' auto (pad to a multiple of stride only) gives each
// image its own shape, which batches cannot hold: it is refused.
//
// As a decoder (rgb_letterbox) it reads each stored image whole; as a
// transform (letterbox) it takes images of one size.
type letterbox struct {
	oh, ow    int
	scaleFill bool
	scaleup   bool
	center    bool
	fill      [3]byte
	in        pipeline.Spec // the transform's input
}

// lbArgs are LetterBox's arguments, as Ultralytics names them.
type lbArgs struct {
	Size      [2]int `json:"size"` // (H, W)
	Auto      bool   `json:"auto"`
	ScaleFill bool   `json:"scale_fill"`
	Scaleup   *bool  `json:"scaleup"`
	Center    *bool  `json:"center"`
	Fill      []int  `json:"fill"`
}

func parseLetterbox(raw json.RawMessage) (*letterbox, error) {
	var a lbArgs
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if err := pipeline.Size("new_shape", a.Size); err != nil {
		return nil, err
	}
	if a.Auto {
		return nil, fmt.Errorf("auto=True pads each image to a multiple of stride only, so images differ " +
			"in shape and cannot share a batch: use auto=False (rect batches give each batch its own shape)")
	}
	l := &letterbox{oh: a.Size[0], ow: a.Size[1], scaleFill: a.ScaleFill, scaleup: true, center: true}
	if a.Scaleup != nil {
		l.scaleup = *a.Scaleup
	}
	if a.Center != nil {
		l.center = *a.Center
	}
	fill := []byte{114, 114, 114}
	if a.Fill != nil {
		f, err := pipeline.Bytes("fill", a.Fill)
		if err != nil {
			return nil, err
		}
		switch len(f) {
		case 1:
			fill = []byte{f[0], f[0], f[0]}
		case 3:
			fill = f
		default:
			return nil, fmt.Errorf("fill needs 1 or 3 values, got %d", len(f))
		}
	}
	copy(l.fill[:], fill)
	return l, nil
}

// lbGeom is where a w×h image goes: resized to nw×nh at (left, top), with
// Ultralytics' ratios rx, ry (the labels' scale: nw/w only to rounding).
type lbGeom struct {
	nw, nh, left, top int
	rx, ry            float64
}

func (l *letterbox) geom(w, h int) lbGeom {
	r := min(float64(l.oh)/float64(h), float64(l.ow)/float64(w))
	if !l.scaleup {
		r = min(r, 1)
	}
	g := lbGeom{rx: r, ry: r,
		nw: max(1, int(math.RoundToEven(float64(w)*r))), nh: max(1, int(math.RoundToEven(float64(h)*r)))}
	if l.scaleFill {
		g.nw, g.nh = l.ow, l.oh
		g.rx, g.ry = float64(l.ow)/float64(w), float64(l.oh)/float64(h)
	}
	// Ultralytics rounds dw/2 - 0.1: half a pixel of odd padding goes right
	// and below.
	if dw, dh := float64(l.ow-g.nw), float64(l.oh-g.nh); l.center {
		g.left, g.top = int(math.RoundToEven(dw/2-0.1)), int(math.RoundToEven(dh/2-0.1))
	}
	return g
}

// step is the map of the pixels: the resize's own scale nw/w, which
// differs from Ultralytics' label ratio r by under half a pixel.
func (l *letterbox) step(w, h int) pipeline.Step {
	g := l.geom(w, h)
	sx, sy := float64(g.nw)/float64(w), float64(g.nh)/float64(h)
	return pipeline.Step{SX: sx, TX: float64(g.left), SY: sy, TY: float64(g.top), W: l.ow, H: l.oh}
}

// lbBuf is a worker's buffers: the decoded image and the resized one.
type lbBuf struct{ dec, res []byte }

// run letterboxes the w×h image src (rows stride bytes apart) into out.
func (l *letterbox) run(c *pipeline.Ctx, src []byte, w, h, stride int, out []byte) {
	g := l.geom(w, h)
	buf := c.State("letterbox", func() any { return &lbBuf{} }).(*lbBuf)
	res := src
	rstride := stride
	if g.nw != w || g.nh != h {
		buf.res = pipeline.Grow(buf.res, g.nw*g.nh*3)
		resizerOf(c).ResizeLinear(buf.res, g.nw, g.nh, src, w, h, stride, 3)
		res, rstride = buf.res, g.nw*3
	}
	ostride := l.ow * 3
	for y := 0; y < l.oh; y++ {
		row := out[y*ostride : (y+1)*ostride]
		sy := y - g.top
		inside := sy >= 0 && sy < g.nh
		for x := 0; x < l.ow; x++ {
			if inside && x == g.left {
				x += g.nw - 1 // the image's span, copied below
				continue
			}
			copy(row[3*x:3*x+3], l.fill[:])
		}
		if inside {
			copy(row[3*g.left:3*(g.left+g.nw)], res[sy*rstride:sy*rstride+g.nw*3])
		}
	}
}

// lbDecoder is rgb_letterbox, LetterBox as the image field's decoder.
type lbDecoder struct{ *letterbox }

func newLetterboxDecoder(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	l, err := parseLetterbox(raw)
	if err != nil {
		return nil, err
	}
	if err := pipeline.NeedType(env, field.RGBImage); err != nil {
		return nil, err
	}
	return &lbDecoder{l}, nil
}

func (d *lbDecoder) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{d.oh, d.ow, 3}, DType: "|u1"}, nil
}

func (d *lbDecoder) Place(_ *pipeline.Ctx, _, w, h int) (pipeline.Step, error) {
	return d.step(w, h), nil
}

func (d *lbDecoder) Run(c *pipeline.Ctx, _ int, _, out []byte) error {
	im := imageOf(c.Col)
	if im.w < 1 || im.h < 1 {
		return fmt.Errorf("%w: empty %dx%d image", field.ErrData, im.w, im.h)
	}
	src := c.Heap
	if im.mode == field.ModeJPEG {
		buf := c.State("letterbox", func() any { return &lbBuf{} }).(*lbBuf)
		buf.dec = pipeline.Grow(buf.dec, im.w*im.h*3)
		if err := decodeWhole(c, im, buf.dec); err != nil {
			return err
		}
		src = buf.dec
	} else if len(src) != im.w*im.h*3 {
		return fmt.Errorf("%w: raw image has %d bytes, expected %d", field.ErrData, len(src), im.w*im.h*3)
	}
	d.run(c, src, im.w, im.h, im.w*3, out)
	return nil
}

// lbTransform is letterbox, LetterBox of decoded images of one size.
type lbTransform struct{ *letterbox }

func newLetterboxTransform(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	l, err := parseLetterbox(raw)
	if err != nil {
		return nil, err
	}
	return &lbTransform{l}, nil
}

func (t *lbTransform) Out(in pipeline.Spec) (pipeline.Spec, error) {
	t.in = in
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	if in.Shape[2] != 3 {
		return in, fmt.Errorf("needs RGB images, got %d channels", in.Shape[2])
	}
	return pipeline.Spec{Shape: []int{t.oh, t.ow, 3}, DType: "|u1"}, nil
}

func (t *lbTransform) Place(_ *pipeline.Ctx, _, w, h int) (pipeline.Step, error) {
	return t.step(w, h), nil
}

func (t *lbTransform) Run(c *pipeline.Ctx, _ int, in, out []byte) error {
	h, w := t.in.Shape[0], t.in.Shape[1]
	t.run(c, in, w, h, w*3, out)
	return nil
}

// labelLetterbox is LabelLetterBox: a decoder of the image field that
// outputs, as float32, what rgb_letterbox with the same arguments does to
// the sample -- Ultralytics' ratio_pad: (ratio_w, ratio_h, pad_left,
// pad_top) -- then the stored image's (width, height).
type labelLetterbox struct{ *letterbox }

func newLabelLetterbox(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	l, err := parseLetterbox(raw)
	if err != nil {
		return nil, err
	}
	if err := pipeline.NeedType(env, field.RGBImage); err != nil {
		return nil, err
	}
	return &labelLetterbox{l}, nil
}

func (l *labelLetterbox) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{6}, DType: "<f4"}, nil
}

func (l *labelLetterbox) Run(c *pipeline.Ctx, _ int, _, out []byte) error {
	im := imageOf(c.Col)
	if im.w < 1 || im.h < 1 {
		return fmt.Errorf("%w: empty %dx%d image", field.ErrData, im.w, im.h)
	}
	g := l.geom(im.w, im.h)
	for i, v := range []float64{g.rx, g.ry, float64(g.left), float64(g.top), float64(im.w), float64(im.h)} {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(v)))
	}
	return nil
}
