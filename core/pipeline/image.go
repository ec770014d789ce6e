package pipeline

import (
	"encoding/json"
	"fmt"
	"image"
	"math"
	"math/rand/v2"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
	"github.com/ffcv-go/ffcv-go/core/trace"
)

// RGB image decoders (raw or JPEG samples in one file both work): whole
// images of one size, random resized crops and centre crops. Crops of JPEG
// samples decode only the region they need.

func init() {
	RegisterDecoder("rgb_simple", newSimpleRGB)
	RegisterDecoder("rgb_rrc", newCropRGB(true))
	RegisterDecoder("rgb_center", newCropRGB(false))
	Register("rrc", newRRCTransform)
}

type imageRef struct {
	mode byte
	w, h int
}

func imageOf(col []byte) imageRef {
	m := field.ParseRGBMeta(col)
	return imageRef{m.Mode, m.Width, m.Height}
}

func decoderOf(c *Ctx) *jpeg.Decoder {
	d := c.State("jpeg", func() any { return jpeg.NewDecoder() }).(*jpeg.Decoder)
	d.SetTimed(c.Times != nil)
	return d
}

// timed adds the last decode's copy and entropy decoding to c.Times.
func timed(c *Ctx, d *jpeg.Decoder) {
	if c.Times != nil {
		tm := d.LastTiming()
		c.Times[trace.Read] += tm.Copy
		c.Times[trace.Entropy] += tm.Entropy
	}
}

func resizerOf(c *Ctx) *imgproc.Resizer {
	return c.State("resizer", func() any { return new(imgproc.Resizer) }).(*imgproc.Resizer)
}

// simpleRGB decodes whole images, which must all have one size.
type simpleRGB struct{ w, h int }

func newSimpleRGB(env Env, raw json.RawMessage) (Op, error) {
	if err := Parse(raw, &NoArgs{}); err != nil {
		return nil, err
	}
	if err := NeedType(env, field.RGBImage); err != nil {
		return nil, err
	}
	d := &simpleRGB{}
	for i := uint64(0); i < env.Reader.NumSamples(); i++ {
		col, err := env.Reader.Column(i, env.Field)
		if err != nil {
			return nil, err
		}
		im := imageOf(col)
		if i == 0 {
			d.w, d.h = im.w, im.h
		} else if im.w != d.w || im.h != d.h {
			return nil, fmt.Errorf("images have different sizes (%dx%d, then %dx%d at sample %d): "+
				"use a crop decoder", d.w, d.h, im.w, im.h, i)
		}
	}
	return d, nil
}

func (d *simpleRGB) Out(Spec) (Spec, error) {
	return Spec{Shape: []int{d.h, d.w, 3}, DType: "|u1"}, nil
}

func (d *simpleRGB) Place(_ *Ctx, _, w, h int) (Step, error) { return Same(w, h), nil }

func (d *simpleRGB) Run(c *Ctx, _ int, _, out []byte) error {
	im := imageOf(c.Col)
	if im.w != d.w || im.h != d.h {
		return fmt.Errorf("%w: image is %dx%d, expected %dx%d", field.ErrData, im.w, im.h, d.w, d.h)
	}
	if im.mode != field.ModeJPEG {
		if len(c.Heap) != len(out) {
			return fmt.Errorf("%w: raw image has %d bytes, expected %d", field.ErrData, len(c.Heap), len(out))
		}
		copy(out, c.Heap)
		return nil
	}
	dec := soloDecoder(c)
	w, h, err := dec.Decode(c.Heap, out)
	if err != nil {
		return fmt.Errorf("%w: %v", field.ErrData, err)
	}
	timed(c, dec)
	if w != d.w || h != d.h {
		return fmt.Errorf("%w: JPEG is %dx%d, the metadata says %dx%d", field.ErrData, w, h, d.w, d.h)
	}
	return nil
}

// cropRGB decodes a crop of each image resized (area) to the output size:
// random (RandomResizedCrop) or central.
type cropRGB struct {
	random       bool
	oh, ow       int
	scale, ratio [2]float64
	center       float64
	// A horizontal flip right after the crop is done by the resize (see
	// Fuse): flip is that op, drawing under flipKey.
	flip    HFlip
	flipKey int
	// shareField is 1 + the field when other programs crop it too: they
	// share each sample's entropy decoding (see ShareViews); 0 otherwise.
	shareField int
	lastView   bool // the last of them: nothing is kept for another view
}

func newCropRGB(random bool) Factory {
	return func(env Env, raw json.RawMessage) (Op, error) {
		d, err := parseCrop(random, raw)
		if err != nil {
			return nil, err
		}
		if err := NeedType(env, field.RGBImage); err != nil {
			return nil, err
		}
		return d, nil
	}
}

func parseCrop(random bool, raw json.RawMessage) (*cropRGB, error) {
	var a struct {
		Size  [2]int     `json:"size"`
		Scale [2]float64 `json:"scale"`
		Ratio json.RawMessage
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	d := &cropRGB{random: random, oh: a.Size[0], ow: a.Size[1], scale: a.Scale}
	if d.oh < 1 || d.ow < 1 {
		return nil, fmt.Errorf("output size %v must be positive", a.Size)
	}
	if random {
		if err := json.Unmarshal(a.Ratio, &d.ratio); err != nil {
			return nil, fmt.Errorf("ratio: %w", err)
		}
		if !(d.scale[0] > 0 && d.scale[0] <= d.scale[1] && d.ratio[0] > 0 && d.ratio[0] <= d.ratio[1]) {
			return nil, fmt.Errorf("bad scale %v or ratio %v", d.scale, d.ratio)
		}
	} else {
		if err := json.Unmarshal(a.Ratio, &d.center); err != nil {
			return nil, fmt.Errorf("ratio: %w", err)
		}
		if !(d.center > 0 && d.center <= 1) {
			return nil, fmt.Errorf("ratio %v must be in (0, 1]", d.center)
		}
	}
	return d, nil
}

func (d *cropRGB) Out(Spec) (Spec, error) {
	return Spec{Shape: []int{d.oh, d.ow, 3}, DType: "|u1"}, nil
}

func (d *cropRGB) rect(r *rand.Rand, w, h int) image.Rectangle {
	if d.random {
		return RandomResizedCrop(r, w, h, d.scale, d.ratio)
	}
	return CenterCrop(w, h, d.center)
}

// draw is the sample's crop of its w×h image, and whether the fused flip
// mirrors it.
func (d *cropRGB) draw(c *Ctx, key, w, h int) (crop image.Rectangle, flip bool) {
	crop = d.rect(c.Rand(key), w, h)
	return crop, d.flip != nil && d.flip.Flips(c, d.flipKey)
}

func (d *cropRGB) Place(c *Ctx, key, w, h int) (Step, error) {
	crop, flip := d.draw(c, key, w, h)
	s := CropStep(crop, d.ow, d.oh)
	if flip {
		s = s.FlipX()
	}
	return s, nil
}

func (d *cropRGB) Run(c *Ctx, op int, _, out []byte) error {
	im := imageOf(c.Col)
	if im.w < 1 || im.h < 1 {
		return fmt.Errorf("%w: empty %dx%d image", field.ErrData, im.w, im.h)
	}
	crop, flip := d.draw(c, op, im.w, im.h)
	if im.mode == field.ModeJPEG {
		dec := d.viewDecoder(c)
		v := jpeg.View{Crop: crop, W: d.ow, H: d.oh, Dst: out, Flip: flip}
		if err := dec.DecodeView(c.Heap, v, d.lastView); err != nil {
			return fmt.Errorf("%w: %v", field.ErrData, err)
		}
		timed(c, dec)
		return nil
	}
	if len(c.Heap) != im.w*im.h*3 {
		return fmt.Errorf("%w: raw image has %d bytes, expected %d", field.ErrData, len(c.Heap), im.w*im.h*3)
	}
	src := imgproc.SubRect(c.Heap, im.w*3, 3, crop)
	resizerOf(c).ResizeAreaFlip(out, d.ow, d.oh, src, crop.Dx(), crop.Dy(), im.w*3, 3, flip)
	return nil
}

// Fuse takes a horizontal flip right after the decoder: the resize
// flips, so the image is written once, and the decoder makes the flip's
// draw itself (through the flip, under its key), so results are identical.
func (d *cropRGB) Fuse(next Op, key int) bool {
	f, ok := next.(HFlip)
	if !ok || d.flip != nil {
		return false
	}
	d.flip, d.flipKey = f, key
	return true
}

// ShareViews makes the decoder share each sample's entropy decoding with
// the other programs of the worker that crop field.
func (d *cropRGB) ShareViews(field int, last bool) { d.shareField, d.lastView = field+1, last }

// viewKey names the image a view session decodes: one field of one sample
// (its position in one epoch's order).
type viewKey struct {
	epoch, pos uint64
	field      int
}

// sessionOf is the image of the worker's view session (zero: none).
func sessionOf(c *Ctx) *viewKey {
	return c.State("views", func() any { return new(viewKey) }).(*viewKey)
}

// viewDecoder returns the worker's JPEG decoder ready for a crop of c's
// sample: in a session with the other views of the sample's field when the
// decoder d is shared, out of any session otherwise.
func (d *cropRGB) viewDecoder(c *Ctx) *jpeg.Decoder {
	if d.shareField == 0 {
		return soloDecoder(c)
	}
	dec := decoderOf(c)
	if s, k := sessionOf(c), (viewKey{c.Epoch, c.Pos, d.shareField}); k != *s {
		dec.BeginViews()
		*s = k
	}
	return dec
}

// soloDecoder returns the worker's JPEG decoder out of any view session.
func soloDecoder(c *Ctx) *jpeg.Decoder {
	dec := decoderOf(c)
	if s := sessionOf(c); *s != (viewKey{}) {
		dec.EndViews()
		*s = viewKey{}
	}
	return dec
}

// RandomResizedCrop samples torchvision's (and FFCV's) random crop of a w×h
// image: up to 10 tries of an area fraction from scale and a log-uniform
// aspect from ratio, then a centre crop clamped to the ratio range.
func RandomResizedCrop(r *rand.Rand, w, h int, scale, ratio [2]float64) image.Rectangle {
	area := float64(w * h)
	logLo, logHi := math.Log(ratio[0]), math.Log(ratio[1])
	for try := 0; try < 10; try++ {
		target := area * (scale[0] + float64(r.Float64()*(scale[1]-scale[0])))
		aspect := math.Exp(logLo + float64(r.Float64()*(logHi-logLo)))
		cw := int(math.RoundToEven(math.Sqrt(target * aspect)))
		ch := int(math.RoundToEven(math.Sqrt(target / aspect)))
		if cw > 0 && cw <= w && ch > 0 && ch <= h {
			top := int(r.Float64() * float64(h-ch+1))
			left := int(r.Float64() * float64(w-cw+1))
			return image.Rect(left, top, left+cw, top+ch)
		}
	}
	in := float64(w) / float64(h)
	cw, ch := w, h
	switch {
	case in < ratio[0]:
		ch = int(math.RoundToEven(float64(w) / ratio[0]))
	case in > ratio[1]:
		cw = int(math.RoundToEven(float64(h) * ratio[1]))
	}
	cw, ch = max(1, min(cw, w)), max(1, min(ch, h))
	top, left := (h-ch)/2, (w-cw)/2
	return image.Rect(left, top, left+cw, top+ch)
}

// CenterCrop is FFCV's centre crop: a square of side int(ratio·min(w, h)).
func CenterCrop(w, h int, ratio float64) image.Rectangle {
	c := max(1, int(ratio*float64(min(w, h))))
	top, left := (h-c)/2, (w-c)/2
	return image.Rect(left, top, left+c, top+c)
}

// rrcTransform is the RandomResizedCrop transform on decoded uint8 images.
type rrcTransform struct {
	*cropRGB
	in Spec
}

func newRRCTransform(_ Env, raw json.RawMessage) (Op, error) {
	d, err := parseCrop(true, raw)
	if err != nil {
		return nil, err
	}
	return &rrcTransform{cropRGB: d}, nil
}

func (t *rrcTransform) Out(in Spec) (Spec, error) {
	t.in = in
	if err := NeedImage(in); err != nil {
		return in, err
	}
	return Spec{Shape: []int{t.oh, t.ow, in.Shape[2]}, DType: "|u1"}, nil
}

func (t *rrcTransform) Place(c *Ctx, key, w, h int) (Step, error) {
	return CropStep(t.rect(c.Rand(key), w, h), t.ow, t.oh), nil
}

func (t *rrcTransform) Run(c *Ctx, op int, in, out []byte) error {
	h, w, ch := t.in.Shape[0], t.in.Shape[1], t.in.Shape[2]
	crop := t.rect(c.Rand(op), w, h)
	src := imgproc.SubRect(in, w*ch, ch, crop)
	resizerOf(c).ResizeArea(out, t.ow, t.oh, src, crop.Dx(), crop.Dy(), w*ch, ch)
	return nil
}
