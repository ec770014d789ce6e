package rgb

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"math"
	"math/rand/v2"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// SSD's crop and zoom out, as torchvision.transforms.v2 draws them
// (RandomIoUCrop, RandomZoomOut), each resized to a fixed output so a
// batch can hold it.

// iouCrop is rgb_iou_crop, RandomIoUCrop as the image field's decoder: it
// reads the sample's stored boxes (another field) to draw its crop.
// Rounds of: a minimum IoU drawn from the options (one of 1 or more keeps
// the whole image); up to trials crops, each side a factor of the image's
// from [min_scale, max_scale], its aspect in [min_aspect, max_aspect], at
// a random place; the first crop holding the centre of a box and having
// IoU >= the minimum with one such box is taken. Boxes whose centres lie
// outside the crop are dropped from the targets that follow. torchvision
// draws rounds until one succeeds; after maxIoURounds the whole image is
// kept (the same outcome as torchvision's when no crop can succeed, where
// it loops until it draws the keep option -- or forever without one).
type iouCrop struct {
	oh, ow  int
	boxes   int // the boxes field
	item    int // its element size (4 or 8)
	scale   [2]float64
	aspect  [2]float64
	options []float64
	trials  int
}

const maxIoURounds = 1000

func newIoUCrop(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	return parseIoUCrop(env, raw, false)
}

// labelIoUCrop is label_iou_crop: a decoder of the image field that
// outputs, as float32, the crop (top, left, height, width) rgb_iou_crop
// with the same arguments takes from the sample (the whole image when it
// keeps it).
type labelIoUCrop struct{ d *iouCrop }

func newLabelIoUCrop(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	d, err := parseIoUCrop(env, raw, true)
	if err != nil {
		return nil, err
	}
	return &labelIoUCrop{d}, nil
}

func (l *labelIoUCrop) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{4}, DType: "<f4"}, nil
}

func (l *labelIoUCrop) Run(c *pipeline.Ctx, key int, _, out []byte) error {
	im := imageOf(c.Col)
	rc, err := l.d.rect(c, key, im.w, im.h)
	if err != nil {
		return err
	}
	for i, v := range []int{rc.Min.Y, rc.Min.X, rc.Dy(), rc.Dx()} {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(v)))
	}
	return nil
}

// parseIoUCrop checks the arguments (and the seed of a label, which pairs
// it with its image op), then finds the boxes field.
func parseIoUCrop(env pipeline.Env, raw json.RawMessage, label bool) (*iouCrop, error) {
	{
		var a struct {
			Size      [2]int     `json:"size"`
			Boxes     string     `json:"boxes"`
			MinScale  float64    `json:"min_scale"`
			MaxScale  float64    `json:"max_scale"`
			MinAspect float64    `json:"min_aspect_ratio"`
			MaxAspect float64    `json:"max_aspect_ratio"`
			Options   *[]float64 `json:"sampler_options"`
			Trials    int        `json:"trials"`
		}
		if err := pipeline.Parse(raw, &a); err != nil {
			return nil, err
		}
		if err := pipeline.Size("size", a.Size); err != nil {
			return nil, err
		}
		if !(a.MinScale > 0 && a.MinScale <= a.MaxScale && a.MaxScale <= 1) {
			return nil, fmt.Errorf("min_scale %v and max_scale %v must satisfy 0 < min_scale <= max_scale <= 1",
				a.MinScale, a.MaxScale)
		}
		if !(a.MinAspect > 0 && a.MinAspect <= a.MaxAspect) || math.IsInf(a.MaxAspect, 0) {
			return nil, fmt.Errorf("min_aspect_ratio %v and max_aspect_ratio %v must satisfy "+
				"0 < min_aspect_ratio <= max_aspect_ratio", a.MinAspect, a.MaxAspect)
		}
		if a.Trials < 1 || a.Trials > 10000 {
			return nil, fmt.Errorf("trials %d must be in [1, 10000]", a.Trials)
		}
		opts := []float64{0, 0.1, 0.3, 0.5, 0.7, 0.9, 1}
		if a.Options != nil {
			opts = *a.Options
		}
		if len(opts) == 0 {
			return nil, fmt.Errorf("sampler_options is empty")
		}
		for _, o := range opts {
			if !(o >= 0) || math.IsInf(o, 0) {
				return nil, fmt.Errorf("sampler_options %v: each must be a finite IoU >= 0", opts)
			}
		}
		if a.Boxes == "" {
			return nil, fmt.Errorf("boxes: the field of the boxes it crops around is missing")
		}
		if label {
			if err := pipeline.NeedSeed(raw); err != nil {
				return nil, err
			}
		}
		if err := pipeline.NeedType(env, field.RGBImage); err != nil {
			return nil, err
		}
		d := &iouCrop{oh: a.Size[0], ow: a.Size[1], scale: [2]float64{a.MinScale, a.MaxScale},
			aspect: [2]float64{a.MinAspect, a.MaxAspect}, options: opts, trials: a.Trials}
		d.boxes = env.Reader.FieldIndex(a.Boxes)
		if d.boxes < 0 {
			return nil, fmt.Errorf("boxes: the file has no field %q", a.Boxes)
		}
		bd := env.Reader.Fields[d.boxes]
		if bd.Type != field.Ragged || bd.Target == nil || bd.Target.Coords != "xyxy" {
			return nil, fmt.Errorf("boxes: field %q is not a RaggedArrayField of xyxy boxes", a.Boxes)
		}
		var err error
		if d.item, err = bd.ItemSize(); err != nil {
			return nil, err
		}
		if bd.DType[1] != 'f' || (d.item != 4 && d.item != 8) {
			return nil, fmt.Errorf("boxes: field %q holds %s, not float32 or float64", a.Boxes, bd.DType)
		}
		return d, nil
	}
}

func (d *iouCrop) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{d.oh, d.ow, 3}, DType: "|u1"}, nil
}

// readBoxes is the sample's stored boxes, those with an area only.
func (d *iouCrop) readBoxes(c *pipeline.Ctx) ([][4]float64, error) {
	if c.Read == nil {
		return nil, fmt.Errorf("it reads the sample's boxes, which needs the loader's reader")
	}
	_, heap, err := c.Read(d.boxes)
	if err != nil {
		return nil, fmt.Errorf("its boxes: %w", err)
	}
	if len(heap)%(4*d.item) != 0 {
		return nil, fmt.Errorf("%w: its boxes field has %d bytes, not whole rows of 4 values", field.ErrData, len(heap))
	}
	var out [][4]float64
	for i := 0; i < len(heap)/(4*d.item); i++ {
		var b [4]float64
		for k := range b {
			if d.item == 4 {
				b[k] = float64(math.Float32frombits(binary.LittleEndian.Uint32(heap[4*(4*i+k):])))
			} else {
				b[k] = math.Float64frombits(binary.LittleEndian.Uint64(heap[8*(4*i+k):]))
			}
		}
		if b[2] > b[0] && b[3] > b[1] {
			out = append(out, b)
		}
	}
	return out, nil
}

// draw is the crop of a w×h image with boxes: ok false keeps the image
// whole. Run, Place, Window and the label all make it.
func (d *iouCrop) draw(c *pipeline.Ctx, key, w, h int) (image.Rectangle, bool, error) {
	boxes, err := d.readBoxes(c)
	if err != nil {
		return image.Rectangle{}, false, err
	}
	r := c.Rand(key)
	if len(boxes) == 0 { // no crop can hold a centre: torchvision ends up keeping the image
		return image.Rectangle{}, false, nil
	}
	for round := 0; round < maxIoURounds; round++ {
		minIoU := d.options[r.IntN(len(d.options))]
		if minIoU >= 1 {
			return image.Rectangle{}, false, nil
		}
		for t := 0; t < d.trials; t++ {
			if rc, ok := d.try(r, w, h, boxes, minIoU); ok {
				return rc, true, nil
			}
		}
	}
	return image.Rectangle{}, false, nil
}

// try is one of torchvision's trials.
func (d *iouCrop) try(r *rand.Rand, w, h int, boxes [][4]float64, minIoU float64) (image.Rectangle, bool) {
	s0 := d.scale[0] + (d.scale[1]-d.scale[0])*r.Float64()
	s1 := d.scale[0] + (d.scale[1]-d.scale[0])*r.Float64()
	nw, nh := int(float64(w)*s0), int(float64(h)*s1)
	if nh == 0 {
		return image.Rectangle{}, false
	}
	if ar := float64(nw) / float64(nh); !(d.aspect[0] <= ar && ar <= d.aspect[1]) {
		return image.Rectangle{}, false
	}
	left := int(float64(w-nw) * r.Float64())
	top := int(float64(h-nh) * r.Float64())
	right, bottom := left+nw, top+nh
	if left == right || top == bottom {
		return image.Rectangle{}, false
	}
	crop := [4]float64{float64(left), float64(top), float64(right), float64(bottom)}
	best, within := 0.0, false
	for _, b := range boxes {
		cx, cy := 0.5*(b[0]+b[2]), 0.5*(b[1]+b[3])
		if !(crop[0] < cx && cx < crop[2] && crop[1] < cy && cy < crop[3]) {
			continue
		}
		within = true
		best = max(best, iou(b, crop))
	}
	if !within || best < minIoU {
		return image.Rectangle{}, false
	}
	return image.Rect(left, top, right, bottom), true
}

// iou is torchvision's box_iou of two xyxy boxes.
func iou(a, b [4]float64) float64 {
	iw := max(0, min(a[2], b[2])-max(a[0], b[0]))
	ih := max(0, min(a[3], b[3])-max(a[1], b[1]))
	inter := iw * ih
	return inter / ((a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - inter)
}

func (d *iouCrop) rect(c *pipeline.Ctx, key, w, h int) (image.Rectangle, error) {
	rc, ok, err := d.draw(c, key, w, h)
	if !ok {
		rc = image.Rect(0, 0, w, h)
	}
	return rc, err
}

func (d *iouCrop) Place(c *pipeline.Ctx, key, w, h int) (pipeline.Step, error) {
	rc, err := d.rect(c, key, w, h)
	return pipeline.CropStep(rc, d.ow, d.oh), err
}

func (d *iouCrop) Window(c *pipeline.Ctx, key, w, h int) ([4]float64, bool, error) {
	rc, ok, err := d.draw(c, key, w, h)
	return [4]float64{float64(rc.Min.X), float64(rc.Min.Y), float64(rc.Max.X), float64(rc.Max.Y)}, ok, err
}

func (d *iouCrop) Run(c *pipeline.Ctx, key int, _, out []byte) error {
	im := imageOf(c.Col)
	if im.w < 1 || im.h < 1 {
		return fmt.Errorf("%w: empty %dx%d image", field.ErrData, im.w, im.h)
	}
	rc, err := d.rect(c, key, im.w, im.h)
	if err != nil {
		return err
	}
	if im.mode == field.ModeJPEG {
		dec := decoderOf(c)
		if err := dec.DecodeCropResizeFlip(c.Heap, rc, d.ow, d.oh, out, false); err != nil {
			return fmt.Errorf("%w: %v", field.ErrData, err)
		}
		timed(c, dec)
		return nil
	}
	if len(c.Heap) != im.w*im.h*3 {
		return fmt.Errorf("%w: raw image has %d bytes, expected %d", field.ErrData, len(c.Heap), im.w*im.h*3)
	}
	src := imgproc.SubRect(c.Heap, im.w*3, 3, rc)
	resizerOf(c).ResizeArea(out, d.ow, d.oh, src, rc.Dx(), rc.Dy(), im.w*3, 3)
	return nil
}

// zoomOut is zoom_out, torchvision's RandomZoomOut on decoded images:
// with probability p, a canvas r times the image's size (r from
// side_range; int(w·r) × int(h·r)) filled with fill, the image at a
// random place on it, then resized (OpenCV's INTER_AREA) to the output
// size (the input's unless size is given).
type zoomOut struct {
	side   [2]float64
	p      float64
	fill   [3]byte
	oh, ow int // 0: the input's
	in     pipeline.Spec
}

func newZoomOut(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		Fill      []int      `json:"fill"`
		SideRange [2]float64 `json:"side_range"`
		P         float64    `json:"p"`
		Size      *[2]int    `json:"size"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if !(a.SideRange[0] >= 1 && a.SideRange[0] <= a.SideRange[1]) || math.IsInf(a.SideRange[1], 0) {
		return nil, fmt.Errorf("side_range %v must be (min, max) with 1 <= min <= max", a.SideRange)
	}
	if err := pipeline.Prob("p", a.P); err != nil {
		return nil, err
	}
	z := &zoomOut{side: a.SideRange, p: a.P}
	fill, err := pipeline.Bytes("fill", a.Fill)
	if err != nil {
		return nil, err
	}
	switch len(fill) {
	case 0:
	case 1:
		z.fill = [3]byte{fill[0], fill[0], fill[0]}
	case 3:
		copy(z.fill[:], fill)
	default:
		return nil, fmt.Errorf("fill needs 1 or 3 values, got %d", len(fill))
	}
	if a.Size != nil {
		if err := pipeline.Size("size", *a.Size); err != nil {
			return nil, err
		}
		z.oh, z.ow = a.Size[0], a.Size[1]
	}
	return z, nil
}

func (z *zoomOut) Out(in pipeline.Spec) (pipeline.Spec, error) {
	z.in = in
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	if in.Shape[2] != 3 {
		return in, fmt.Errorf("needs RGB images, got %d channels", in.Shape[2])
	}
	if z.oh == 0 {
		z.oh, z.ow = in.Shape[0], in.Shape[1]
	}
	return pipeline.Spec{Shape: []int{z.oh, z.ow, 3}, DType: "|u1"}, nil
}

// zoomDraw is a sample's draw: whether it zooms out, the canvas's scale,
// and the image's place on it as fractions of the free width and height;
// each a float32, so that its report is exact.
type zoomDraw struct {
	on        bool
	s, fx, fy float64
}

func (z *zoomOut) draw(c *pipeline.Ctx, key int) zoomDraw {
	r := c.Rand(key)
	if r.Float64() >= z.p {
		return zoomDraw{}
	}
	f32 := func(v float64) float64 { return float64(float32(v)) }
	return zoomDraw{on: true, s: f32(z.side[0] + r.Float64()*(z.side[1]-z.side[0])), fx: f32(r.Float64()), fy: f32(r.Float64())}
}

// place is the canvas (cw×ch) and the image's place on it (left, top) for
// a w×h image, as torchvision computes them: cw = int(w·s), left =
// int((cw - w)·fx). Not zoomed out, the canvas is the image.
func (d zoomDraw) place(w, h int) (left, top, cw, ch int) {
	if !d.on {
		return 0, 0, w, h
	}
	cw, ch = int(float64(w)*d.s), int(float64(h)*d.s)
	return int(float64(cw-w) * d.fx), int(float64(ch-h) * d.fy), cw, ch
}

// Reports: (zoomed out: 1 or 0, s, fx, fy): the canvas is int(w·s) ×
// int(h·s), the image at (int((int(w·s) - w)·fx), int((int(h·s) - h)·fy)).
func (z *zoomOut) Reports() int { return 4 }

func (z *zoomOut) Report(c *pipeline.Ctx, key int, dst []float32) {
	d := z.draw(c, key)
	dst[0], dst[1], dst[2], dst[3] = b2f(d.on), float32(d.s), float32(d.fx), float32(d.fy)
}

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

func (z *zoomOut) Place(c *pipeline.Ctx, key, w, h int) (pipeline.Step, error) {
	l, t, cw, ch := z.draw(c, key).place(w, h)
	return pipeline.CropStep(image.Rect(-l, -t, cw-l, ch-t), z.ow, z.oh), nil
}

// zoomBuf is a worker's canvas.
type zoomBuf struct{ b []byte }

func (z *zoomOut) Run(c *pipeline.Ctx, key int, in, out []byte) error {
	h, w := z.in.Shape[0], z.in.Shape[1]
	l, t, cw, ch := z.draw(c, key).place(w, h)
	canvas := in
	if cw != w || ch != h {
		buf := c.State("zoom_out", func() any { return &zoomBuf{} }).(*zoomBuf)
		buf.b = pipeline.Grow(buf.b, cw*ch*3)
		canvas = buf.b
		imgproc.FillRGB(canvas[:cw*ch*3], z.fill)
		for y := 0; y < h; y++ {
			copy(canvas[((t+y)*cw+l)*3:], in[y*w*3:(y+1)*w*3])
		}
	}
	resizerOf(c).ResizeArea(out, z.ow, z.oh, canvas, cw, ch, cw*3, 3)
	return nil
}
