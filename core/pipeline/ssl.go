package pipeline

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
)

// FFCV-SSL's colour jitter (with torchvision's ColorJitter semantics) and
// its LabelRandomResizedCrop. Its other Label* ops are the generic label op
// (label.go) over the image ops' Report.

func init() {
	Register("color_jitter", newColorJitter)
	RegisterDecoder("label_rrc", newLabelRRC)
}

// jitter is ColorJitter's configuration: a (min, max) factor range per
// component (nil: left out), and the probability p of jittering at all.
type jitter struct {
	P          float64     `json:"p"`
	Brightness *[2]float64 `json:"brightness"`
	Contrast   *[2]float64 `json:"contrast"`
	Saturation *[2]float64 `json:"saturation"`
	Hue        *[2]float64 `json:"hue"`
}

func (j *jitter) check() error {
	for _, f := range []struct {
		name string
		r    *[2]float64
	}{{"brightness", j.Brightness}, {"contrast", j.Contrast}, {"saturation", j.Saturation}} {
		if f.r != nil && !(f.r[0] >= 0 && f.r[0] <= f.r[1]) {
			return fmt.Errorf("%s %v must be a non-negative (min, max)", f.name, *f.r)
		}
	}
	if h := j.Hue; h != nil && !(-0.5 <= h[0] && h[0] <= h[1] && h[1] <= 0.5) {
		return fmt.Errorf("hue %v must be (min, max) within [-0.5, 0.5]", *h)
	}
	if !(j.P >= 0 && j.P <= 1) {
		return fmt.Errorf("p %v must be in [0, 1]", j.P)
	}
	return nil
}

// jitterDraw is one sample's jitter: whether it applies, the order of the
// four adjustments and their factors (brightness, contrast, saturation, hue;
// identity values for those left out).
type jitterDraw struct {
	apply   bool
	order   [4]int
	factors [4]float64
}

func (j *jitter) draw(c *Ctx, op int) jitterDraw {
	r := c.Rand(op)
	d := jitterDraw{apply: r.Float64() < j.P, order: [4]int{0, 1, 2, 3}, factors: [4]float64{1, 1, 1, 0}}
	for i := 3; i > 0; i-- { // a random order, as torch.randperm(4)
		k := r.IntN(i + 1)
		d.order[i], d.order[k] = d.order[k], d.order[i]
	}
	for i, rg := range []*[2]float64{j.Brightness, j.Contrast, j.Saturation, j.Hue} {
		u := r.Float64() // drawn whether used or not, so factors keep their draws
		if rg != nil {
			d.factors[i] = rg[0] + float64(u*(rg[1]-rg[0]))
		}
	}
	return d
}

type colorJitter struct {
	SameImage
	PhotometricOp
	jitter
	spec Spec
}

func newColorJitter(_ Env, raw json.RawMessage) (Op, error) {
	var j colorJitter
	if err := Parse(raw, &j.jitter); err != nil {
		return nil, err
	}
	if err := j.check(); err != nil {
		return nil, err
	}
	return &j, nil
}

func (j *colorJitter) Out(in Spec) (Spec, error) {
	j.spec = in
	if err := NeedImage(in); err != nil {
		return in, err
	}
	if ch := in.Shape[2]; ch != 1 && ch != 3 {
		return in, fmt.Errorf("color jitter needs 1 or 3 channels, got %d", ch)
	}
	return in, nil
}

func (j *colorJitter) Run(c *Ctx, op int, in, out []byte) error {
	CopyIfNeeded(out, in)
	d := j.draw(c, op)
	if !d.apply {
		return nil
	}
	ch := j.spec.Shape[2]
	for _, k := range d.order {
		f := d.factors[k]
		switch {
		case k == 0 && j.Brightness != nil:
			imgproc.Brightness(out, f)
		case k == 1 && j.Contrast != nil:
			imgproc.Contrast(out, ch, f)
		case k == 2 && j.Saturation != nil:
			imgproc.Saturation(out, ch, f, nil)
		case k == 3 && j.Hue != nil:
			imgproc.Hue(out, ch, f)
		}
	}
	return nil
}

// Reports: brightness, contrast, saturation and hue factors; (1, 1, 1, 0)
// when the jitter did not apply (FFCV-SSL's layout).
func (j *colorJitter) Reports() int { return 4 }

func (j *colorJitter) Report(c *Ctx, key int, dst []float32) {
	d := j.draw(c, key)
	if !d.apply {
		d.factors = [4]float64{1, 1, 1, 0}
	}
	for i, f := range d.factors {
		dst[i] = float32(f)
	}
}

// labelRRC is FFCV-SSL's LabelRandomResizedCrop: a decoder of the image
// field that outputs, as int32, (width, height, top, left, crop height, crop
// width) of the crop the rgb_rrc decoder with the same arguments and seed
// takes: that decoder's own draw.
type labelRRC struct{ crop *cropRGB }

func newLabelRRC(env Env, raw json.RawMessage) (Op, error) {
	d, err := parseCrop(true, raw)
	if err != nil {
		return nil, err
	}
	if err := NeedSeed(raw); err != nil {
		return nil, err
	}
	if err := NeedType(env, field.RGBImage); err != nil {
		return nil, err
	}
	return &labelRRC{crop: d}, nil
}

func (l *labelRRC) Out(Spec) (Spec, error) { return Spec{Shape: []int{6}, DType: "<i4"}, nil }

func (l *labelRRC) Run(c *Ctx, op int, _, out []byte) error {
	im := imageOf(c.Col)
	if im.w < 1 || im.h < 1 {
		return fmt.Errorf("%w: empty %dx%d image", field.ErrData, im.w, im.h)
	}
	rc, _ := l.crop.draw(c, op, im.w, im.h)
	for i, v := range []int{im.w, im.h, rc.Min.Y, rc.Min.X, rc.Dy(), rc.Dx()} {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(int32(v)))
	}
	return nil
}
