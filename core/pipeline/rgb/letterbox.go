package rgb

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/order"
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
	oh, ow    int // the output: new_shape, or with rect the largest batch shape
	scaleFill bool
	scaleup   bool
	center    bool
	fill      [3]byte
	in        pipeline.Spec // the transform's input
	rect      *rectPlan
}

// rectPlan is Ultralytics' rect batches (see order.Rect, RectShapes): the
// file's samples in the rect order, cut into batches, each letterboxed to
// its batch's shape at the top-left of the output (a square that holds
// any batch shape), the image first resized as Ultralytics' load_image
// does, its long side to imgsz at most.
type rectPlan struct {
	imgsz int
	order []uint64 // the sample at each position
	shape [][2]int // each sample's batch shape (rows, cols), by id
}

type rectArgs struct {
	BatchSize int     `json:"batch_size"`
	Imgsz     int     `json:"imgsz"`
	Stride    int     `json:"stride"`
	Pad       float64 `json:"pad"`
}

func (a rectArgs) check() error {
	if a.BatchSize < 1 || a.Imgsz < 1 || a.Stride < 1 || a.Imgsz > 1<<15 || a.Stride > 1<<15 {
		return fmt.Errorf("rect: batch_size %d, imgsz %d and stride %d must be positive", a.BatchSize, a.Imgsz, a.Stride)
	}
	if !(a.Pad >= 0 && a.Pad <= 64) {
		return fmt.Errorf("rect: pad %v must be in [0, 64]", a.Pad)
	}
	return nil
}

// planRect reads the aspect of every image of env's field and lays out
// the rect batches.
func planRect(env pipeline.Env, a rectArgs) (*rectPlan, error) {
	n := env.Reader.NumSamples()
	aspects := make([]float64, n)
	ids := make([]uint64, n)
	for i := range aspects {
		col, err := env.Reader.Column(uint64(i), env.Field)
		if err != nil {
			return nil, err
		}
		aspects[i], ids[i] = field.ParseRGBMeta(col).Aspect(), uint64(i)
	}
	p := &rectPlan{imgsz: a.Imgsz, order: order.Rect(ids, func(id uint64) float64 { return aspects[id] }),
		shape: make([][2]int, n)}
	sorted := make([]float64, n)
	for k, id := range p.order {
		sorted[k] = aspects[id]
	}
	for b, s := range order.RectShapes(sorted, a.BatchSize, a.Imgsz, a.Stride, a.Pad) {
		for _, id := range p.order[b*a.BatchSize : min((b+1)*a.BatchSize, len(p.order))] {
			p.shape[id] = s
		}
	}
	return p, nil
}

// target is the shape the sample is letterboxed to, and the largest
// scale load_image allows it (0: none).
func (l *letterbox) target(sample uint64, w, h int) (oh, ow int, limit float64) {
	if l.rect == nil || sample >= uint64(len(l.rect.shape)) {
		return l.oh, l.ow, 0
	}
	s := l.rect.shape[sample]
	return s[0], s[1], float64(l.rect.imgsz) / float64(max(w, h))
}

// lbArgs are LetterBox's arguments, as Ultralytics names them.
type lbArgs struct {
	Size      [2]int    `json:"size"` // (H, W)
	Auto      bool      `json:"auto"`
	ScaleFill bool      `json:"scale_fill"`
	Scaleup   *bool     `json:"scaleup"`
	Center    *bool     `json:"center"`
	Fill      []int     `json:"fill"`
	Rect      *rectArgs `json:"rect"`
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
	if a.Rect != nil {
		if err := a.Rect.check(); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// withRect lays out the rect batches of a decoder's letterbox.
func (l *letterbox) withRect(env pipeline.Env, raw json.RawMessage) error {
	var a lbArgs
	if err := pipeline.Parse(raw, &a); err != nil || a.Rect == nil {
		return err
	}
	var err error
	l.rect, err = planRect(env, *a.Rect)
	// The output holds any batch's shape: no side exceeds imgsz, so none
	// exceeds ceil(imgsz/stride + pad)·stride.
	r := *a.Rect
	l.oh = int(math.Ceil(float64(r.Imgsz)/float64(r.Stride)+r.Pad)) * r.Stride
	l.ow = l.oh
	return err
}

// lbGeom is where a w×h image goes: resized to nw×nh at (left, top), with
// Ultralytics' ratios rx, ry (the labels' scale: nw/w only to rounding).
type lbGeom struct {
	nw, nh, left, top int
	rx, ry            float64
	oh, ow            int // the shape letterboxed to (the output's, but for rect batches)
}

func (l *letterbox) geom(w, h int) lbGeom { return l.geomOf(0, w, h) }

// geomOf is the geometry of sample's w×h image.
func (l *letterbox) geomOf(sample uint64, w, h int) lbGeom {
	oh, ow, limit := l.target(sample, w, h)
	r := min(float64(oh)/float64(h), float64(ow)/float64(w))
	if limit > 0 {
		r = min(r, limit)
	}
	if !l.scaleup {
		r = min(r, 1)
	}
	g := lbGeom{rx: r, ry: r,
		nw: max(1, int(math.RoundToEven(float64(w)*r))), nh: max(1, int(math.RoundToEven(float64(h)*r)))}
	if l.scaleFill {
		g.nw, g.nh = ow, oh
		g.rx, g.ry = float64(ow)/float64(w), float64(oh)/float64(h)
	}
	g.oh, g.ow = oh, ow
	// Ultralytics rounds dw/2 - 0.1: half a pixel of odd padding goes right
	// and below.
	if dw, dh := float64(ow-g.nw), float64(oh-g.nh); l.center {
		g.left, g.top = int(math.RoundToEven(dw/2-0.1)), int(math.RoundToEven(dh/2-0.1))
	}
	return g
}

// step is the map of the pixels: the resize's own scale nw/w, which
// differs from Ultralytics' label ratio r by under half a pixel.
func (l *letterbox) step(sample uint64, w, h int) pipeline.Step {
	g := l.geomOf(sample, w, h)
	sx, sy := float64(g.nw)/float64(w), float64(g.nh)/float64(h)
	return pipeline.Step{SX: sx, TX: float64(g.left), SY: sy, TY: float64(g.top), W: l.ow, H: l.oh}
}

// lbBuf is a worker's buffers: the decoded image and the resized one.
type lbBuf struct{ dec, res []byte }

// run letterboxes the w×h image src (rows stride bytes apart) into out.
func (l *letterbox) run(c *pipeline.Ctx, src []byte, w, h, stride int, out []byte) {
	g := l.geomOf(c.Sample, w, h)
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
		if !inside {
			imgproc.FillRGB(row[:3*l.ow], l.fill)
			continue
		}
		imgproc.FillRGB(row[:3*g.left], l.fill)
		imgproc.FillRGB(row[3*(g.left+g.nw):3*l.ow], l.fill)
		copy(row[3*g.left:3*(g.left+g.nw)], res[sy*rstride:sy*rstride+g.nw*3])
	}
}

// lbDecoder is rgb_letterbox, LetterBox as the image field's decoder.
type lbDecoder struct{ *letterbox }

func newLetterboxDecoder(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	l, err := letterboxOfField(env, raw)
	if err != nil {
		return nil, err
	}
	return &lbDecoder{l}, nil
}

// letterboxOfField builds the letterbox of a decoder of env's image field:
// the decoder's and its Label op's.
func letterboxOfField(env pipeline.Env, raw json.RawMessage) (*letterbox, error) {
	l, err := parseLetterbox(raw)
	if err != nil {
		return nil, err
	}
	if err := pipeline.NeedType(env, field.RGBImage); err != nil {
		return nil, err
	}
	if err := l.withRect(env, raw); err != nil {
		return nil, err
	}
	return l, nil
}

func (d *lbDecoder) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{d.oh, d.ow, 3}, DType: "|u1"}, nil
}

func (d *lbDecoder) Place(c *pipeline.Ctx, _, w, h int) (pipeline.Step, error) {
	return d.step(c.Sample, w, h), nil
}

// checkRect refuses a sample that is not where the rect order puts it: its
// batch shape would not be its batch's.
func (l *letterbox) checkRect(c *pipeline.Ctx) error {
	if l.rect == nil {
		return nil
	}
	if c.Pos >= uint64(len(l.rect.order)) || l.rect.order[c.Pos] != c.Sample {
		return fmt.Errorf("rect batches need the loader's order to be the rect order (OrderOption.RECT) over "+
			"all the file's samples (no indices=): sample %d came at position %d", c.Sample, c.Pos)
	}
	return nil
}

func (d *lbDecoder) Run(c *pipeline.Ctx, _ int, _, out []byte) error {
	if err := d.checkRect(c); err != nil {
		return err
	}
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
	var a lbArgs
	if pipeline.Parse(raw, &a) == nil && a.Rect != nil {
		return nil, fmt.Errorf("rect batches letterbox each stored image to its batch's shape: LetterBox(rect=...) " +
			"must open the pipeline (as its decoder)")
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
	return t.step(0, w, h), nil
}

func (t *lbTransform) Run(c *pipeline.Ctx, _ int, in, out []byte) error {
	h, w := t.in.Shape[0], t.in.Shape[1]
	t.run(c, in, w, h, w*3, out)
	return nil
}

// labelLetterbox is LabelLetterBox: a decoder of the image field that
// outputs, as float32, what rgb_letterbox with the same arguments does to
// the sample -- Ultralytics' ratio_pad: (ratio_w, ratio_h, pad_left,
// pad_top) -- then the stored image's (width, height) and the shape
// (rows, cols) it is letterboxed to (its batch's, with rect).
type labelLetterbox struct{ *letterbox }

func newLabelLetterbox(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	l, err := letterboxOfField(env, raw)
	if err != nil {
		return nil, err
	}
	return &labelLetterbox{l}, nil
}

func (l *labelLetterbox) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{8}, DType: "<f4"}, nil
}

func (l *labelLetterbox) Run(c *pipeline.Ctx, _ int, _, out []byte) error {
	im := imageOf(c.Col)
	if im.w < 1 || im.h < 1 {
		return fmt.Errorf("%w: empty %dx%d image", field.ErrData, im.w, im.h)
	}
	g := l.geomOf(c.Sample, im.w, im.h)
	for i, v := range []float64{g.rx, g.ry, float64(g.left), float64(g.top), float64(im.w), float64(im.h),
		float64(g.oh), float64(g.ow)} {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(v)))
	}
	return nil
}
