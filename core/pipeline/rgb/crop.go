package rgb

import (
	"encoding/json"
	"fmt"
	"image"
	"math"
	"math/rand/v2"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// cropRGB decodes a crop of each image resized (area) to the output size:
// random (RandomResizedCrop), or a square at the centre or a corner.
type cropRGB struct {
	random bool
	oh, ow int
	// A random crop's area fraction and aspect ratio ranges, and second,
	// its second_seed: the crop is drawn beside the one drawn under it.
	scale, ratio [2]float64
	second       *uint32
	// A square's side, as a fraction of the image's shorter side, and its
	// corner ("": the centre).
	side   float64
	corner string
	// A horizontal flip right after the crop is done by the resize (see
	// Fuse): flip is that op, drawing under flipKey.
	flip    pipeline.HFlip
	flipKey int
	// shareField is 1 + the field when other programs crop it too: they
	// share each sample's entropy decoding (see ShareViews); 0 otherwise.
	shareField int
	lastView   bool // the last of them: nothing is kept for another view
}

// The crops cropRGB takes.
type cropKind int

const (
	randomCrop cropKind = iota // RandomResizedCrop
	centerCrop                 // the centred square
	cornerCrop                 // a corner's square
)

func newCropRGB(kind cropKind) pipeline.Factory {
	return func(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
		d, err := parseCrop(kind, raw)
		if err != nil {
			return nil, err
		}
		if err := pipeline.NeedType(env, field.RGBImage); err != nil {
			return nil, err
		}
		return d, nil
	}
}

// parseCrop reads a crop's arguments: size (Python's output_size); for a
// random crop scale, ratio (min, max) and second_seed; for a square ratio
// (its side over the shorter side) and, at a corner, corner.
func parseCrop(kind cropKind, raw json.RawMessage) (*cropRGB, error) {
	var a struct {
		Size       [2]int          `json:"size"`
		Scale      *[2]float64     `json:"scale"`
		Ratio      json.RawMessage `json:"ratio"`
		Corner     *string         `json:"corner"`
		SecondSeed *uint32         `json:"second_seed"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if err := pipeline.Size("output_size", a.Size); err != nil {
		return nil, err
	}
	d := &cropRGB{random: kind == randomCrop, oh: a.Size[0], ow: a.Size[1]}
	if kind != randomCrop {
		if a.Scale != nil || a.SecondSeed != nil {
			return nil, fmt.Errorf("a square crop takes no scale or second_seed")
		}
		if json.Unmarshal(a.Ratio, &d.side) != nil || !(d.side > 0 && d.side <= 1) {
			return nil, fmt.Errorf("ratio %s must be a number in (0, 1]", a.Ratio)
		}
		if kind == centerCrop {
			if a.Corner != nil {
				return nil, fmt.Errorf("a centre crop takes no corner")
			}
			return d, nil
		}
		if a.Corner != nil {
			d.corner = *a.Corner
		}
		switch d.corner {
		case "top_left", "top_right", "bottom_left", "bottom_right":
		default:
			return nil, fmt.Errorf("corner %q must be top_left, top_right, bottom_left or bottom_right", d.corner)
		}
		return d, nil
	}
	if a.Corner != nil {
		return nil, fmt.Errorf("a random crop takes no corner")
	}
	if a.Scale != nil {
		d.scale = *a.Scale
	}
	if !(d.scale[0] > 0 && d.scale[0] <= d.scale[1]) || math.IsInf(d.scale[1], 0) {
		return nil, fmt.Errorf("scale %v must be (min, max) with 0 < min <= max", d.scale)
	}
	if json.Unmarshal(a.Ratio, &d.ratio) != nil || !(d.ratio[0] > 0 && d.ratio[0] <= d.ratio[1]) ||
		math.IsInf(d.ratio[1], 0) {
		return nil, fmt.Errorf("ratio %s must be (min, max) with 0 < min <= max", a.Ratio)
	}
	if a.SecondSeed != nil {
		if h, err := pipeline.ParseHead(raw); err != nil || h.Seed == nil {
			return nil, fmt.Errorf("second_seed needs a seed too")
		}
		d.second = a.SecondSeed
	}
	return d, nil
}

func (d *cropRGB) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{d.oh, d.ow, 3}, DType: "|u1"}, nil
}

// rect is the sample's crop of its w×h image, drawn under key.
func (d *cropRGB) rect(c *pipeline.Ctx, key, w, h int) image.Rectangle {
	switch {
	case !d.random:
		return SquareCrop(w, h, d.side, d.corner)
	case d.second == nil:
		return RandomResizedCrop(c.Rand(key), w, h, d.scale, d.ratio)
	}
	// second_seed: the crop the same decoder draws under second_seed, then
	// this one in the largest strip of the image beside it (see
	// NonOverlappingCrop).
	other := RandomResizedCrop(c.Rand(pipeline.SeedKey(*d.second)), w, h, d.scale, d.ratio)
	return NonOverlappingCrop(c.Rand(key), w, h, other, d.scale, d.ratio)
}

// draw is the sample's crop of its w×h image, and whether the fused flip
// mirrors it.
func (d *cropRGB) draw(c *pipeline.Ctx, key, w, h int) (crop image.Rectangle, flip bool) {
	crop = d.rect(c, key, w, h)
	return crop, d.flip != nil && d.flip.Flips(c, d.flipKey)
}

func (d *cropRGB) Place(c *pipeline.Ctx, key, w, h int) (pipeline.Step, error) {
	crop, flip := d.draw(c, key, w, h)
	s := pipeline.CropStep(crop, d.ow, d.oh)
	if flip {
		s = s.FlipX()
	}
	return s, nil
}

func (d *cropRGB) Run(c *pipeline.Ctx, op int, _, out []byte) error {
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
func (d *cropRGB) Fuse(next pipeline.Op, key int) bool {
	f, ok := next.(pipeline.HFlip)
	if !ok || d.flip != nil {
		return false
	}
	d.flip, d.flipKey = f, key
	return true
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

// NonOverlappingCrop samples a random crop of a w×h image that does not
// overlap other (FFCV-SSL's second_seed): torchvision's sampling (see
// RandomResizedCrop) inside the largest of the four strips beside other --
// above, below, left and right of it, each the image's whole width or
// height; the first of them in that order when two are as large. Only
// when other covers the whole image is there no strip: the crop is then
// the whole image.
func NonOverlappingCrop(r *rand.Rand, w, h int, other image.Rectangle, scale, ratio [2]float64) image.Rectangle {
	var best image.Rectangle
	for _, s := range []image.Rectangle{
		image.Rect(0, 0, w, other.Min.Y), image.Rect(0, other.Max.Y, w, h),
		image.Rect(0, 0, other.Min.X, h), image.Rect(other.Max.X, 0, w, h),
	} {
		if s.Dx()*s.Dy() > best.Dx()*best.Dy() {
			best = s
		}
	}
	if best.Empty() {
		return image.Rect(0, 0, w, h)
	}
	return RandomResizedCrop(r, best.Dx(), best.Dy(), scale, ratio).Add(best.Min)
}

// SquareCrop is FFCV's centre crop and FFCV-SSL's corner crops: a square
// of side int(ratio·min(w, h)) (at least 1) at the centre (corner "") or
// at the named corner ("top_left" has row 0 and column 0).
func SquareCrop(w, h int, ratio float64, corner string) image.Rectangle {
	side := max(1, int(ratio*float64(min(w, h))))
	top, left := (h-side)/2, (w-side)/2
	switch corner {
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

// cropTransform is RandomResizedCrop, and FFCV-SSL's CenterCrop and
// CornerCrop, on decoded uint8 images: the crop decoder's draw, without its
// decoding, fusing or view sharing.
type cropTransform struct {
	crop *cropRGB
	in   pipeline.Spec
}

func newCropTransform(kind cropKind) pipeline.Factory {
	return func(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
		d, err := parseCrop(kind, raw)
		if err != nil {
			return nil, err
		}
		return &cropTransform{crop: d}, nil
	}
}

func (t *cropTransform) Out(in pipeline.Spec) (pipeline.Spec, error) {
	t.in = in
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	return pipeline.Spec{Shape: []int{t.crop.oh, t.crop.ow, in.Shape[2]}, DType: "|u1"}, nil
}

func (t *cropTransform) Place(c *pipeline.Ctx, key, w, h int) (pipeline.Step, error) {
	return pipeline.CropStep(t.crop.rect(c, key, w, h), t.crop.ow, t.crop.oh), nil
}

func (t *cropTransform) Run(c *pipeline.Ctx, op int, in, out []byte) error {
	h, w, ch := t.in.Shape[0], t.in.Shape[1], t.in.Shape[2]
	crop := t.crop.rect(c, op, w, h)
	src := imgproc.SubRect(in, w*ch, ch, crop)
	resizerOf(c).ResizeArea(out, t.crop.ow, t.crop.oh, src, crop.Dx(), crop.Dy(), w*ch, ch)
	return nil
}
