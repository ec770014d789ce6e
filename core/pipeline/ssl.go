package pipeline

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// FFCV-SSL's colour jitter (with torchvision's ColorJitter semantics) and
// its Label* operations. A Label op goes in another pipeline (FFCV-SSL: the
// label's) and outputs that pipeline's values as float32 followed by the
// parameters the paired image op drew for the sample. Both take the same
// "seed", which Build turns into the same randomness key (SeedKey), and the
// Label op makes the image op's draws in the same order (through the same
// function where the image op has one), so the parameters are the image op's.

func init() {
	register("color_jitter", newColorJitter)
	register("label_color_jitter", newLabelOp(labelColorJitter))
	register("label_grayscale", newLabelOp(labelGrayscale))
	register("label_solarize", newLabelOp(labelSolarize))
	register("label_gaussian_blur", newLabelOp(labelBlur))
	register("label_rotate", newLabelOp(labelRotate))
	register("label_translate", newLabelOp(labelTranslate))
	register("label_rrc", newLabelRRC)
	decoders["label_rrc"] = true
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
	sameImage
	jitter
	spec Spec
}

func newColorJitter(_ Env, raw json.RawMessage) (Op, error) {
	var j colorJitter
	if err := parse(raw, &j.jitter); err != nil {
		return nil, err
	}
	if err := j.check(); err != nil {
		return nil, err
	}
	return &j, nil
}

func (j *colorJitter) Out(in Spec) (Spec, error) {
	j.spec = in
	if err := needImage(in); err != nil {
		return in, err
	}
	if ch := in.Shape[2]; ch != 1 && ch != 3 {
		return in, fmt.Errorf("color jitter needs 1 or 3 channels, got %d", ch)
	}
	return in, nil
}

func (j *colorJitter) Run(c *Ctx, op int, in, out []byte) error {
	copyIfNeeded(out, in)
	d := j.draw(c, op)
	if !d.apply {
		return nil
	}
	ch := j.spec.Shape[2]
	for _, k := range d.order {
		f := d.factors[k]
		switch {
		case k == 0 && j.Brightness != nil:
			tvBrightness(out, f)
		case k == 1 && j.Contrast != nil:
			tvContrast(out, ch, f)
		case k == 2 && j.Saturation != nil:
			tvSaturation(out, ch, f)
		case k == 3 && j.Hue != nil:
			tvHue(out, ch, f)
		}
	}
	return nil
}

// maxLabelParams bounds labelKind.n.
const maxLabelParams = 4

// A labelKind draws what its image op draws and writes the parameters.
type labelKind struct {
	n     int                                                           // parameters per sample
	parse func(raw json.RawMessage) (func(*Ctx, int, []float32), error) // the drawing function
}

// labelOp appends the drawn parameters to a 1-D numeric sample as float32.
// Workers share it: Run keeps its parameters on the stack.
type labelOp struct {
	kind labelKind
	draw func(*Ctx, int, []float32)
	in   Spec
}

// needSeed rejects a Label op without "seed": its position in another
// pipeline is no key to pair it with anything.
func needSeed(raw json.RawMessage) error {
	var s struct {
		Seed *uint32 `json:"seed"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.Seed == nil {
		return fmt.Errorf("needs the seed of the image operation it reports on")
	}
	return nil
}

func newLabelOp(kind labelKind) factory {
	return func(_ Env, raw json.RawMessage) (Op, error) {
		draw, err := kind.parse(raw)
		if err != nil {
			return nil, err
		}
		if err := needSeed(raw); err != nil {
			return nil, err
		}
		return &labelOp{kind: kind, draw: draw}, nil
	}
}

func (l *labelOp) Out(in Spec) (Spec, error) {
	l.in = in
	n := 1
	for _, d := range in.Shape {
		n *= d
	}
	switch in.DType {
	case "<i8", "<i4", "<f4", "<f8", "|u1":
	default:
		return in, fmt.Errorf("needs numeric values (int64, int32, float32, float64, uint8), got %s", in.DType)
	}
	if len(in.Shape) > 1 {
		return in, fmt.Errorf("needs a scalar or a vector, got shape %v", in.Shape)
	}
	return Spec{Shape: []int{n + l.kind.n}, DType: "<f4"}, nil
}

func (l *labelOp) Run(c *Ctx, op int, in, out []byte) error {
	n := 0
	for len(in) > 0 {
		var v float32
		switch l.in.DType {
		case "<i8":
			v, in = float32(int64(binary.LittleEndian.Uint64(in))), in[8:]
		case "<i4":
			v, in = float32(int32(binary.LittleEndian.Uint32(in))), in[4:]
		case "<f4":
			v, in = math.Float32frombits(binary.LittleEndian.Uint32(in)), in[4:]
		case "<f8":
			v, in = float32(math.Float64frombits(binary.LittleEndian.Uint64(in))), in[8:]
		default:
			v, in = float32(in[0]), in[1:]
		}
		binary.LittleEndian.PutUint32(out[4*n:], math.Float32bits(v))
		n++
	}
	var buf [maxLabelParams]float32
	params := buf[:l.kind.n]
	l.draw(c, op, params)
	for i, v := range params {
		binary.LittleEndian.PutUint32(out[4*(n+i):], math.Float32bits(v))
	}
	return nil
}

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

// labelColorJitter: brightness, contrast, saturation, hue factors; (1, 1, 1, 0)
// when the jitter did not apply (FFCV-SSL's layout).
var labelColorJitter = labelKind{n: 4, parse: func(raw json.RawMessage) (func(*Ctx, int, []float32), error) {
	var j jitter
	if err := parse(raw, &j); err != nil {
		return nil, err
	}
	if err := j.check(); err != nil {
		return nil, err
	}
	return func(c *Ctx, op int, dst []float32) {
		d := j.draw(c, op)
		if !d.apply {
			d.factors = [4]float64{1, 1, 1, 0}
		}
		for i, f := range d.factors {
			dst[i] = float32(f)
		}
	}, nil
}}

// labelGrayscale: 0 when the image was turned grey, 1 otherwise (FFCV-SSL's
// convention), for the grayscale op.
var labelGrayscale = labelKind{n: 1, parse: func(raw json.RawMessage) (func(*Ctx, int, []float32), error) {
	var a struct {
		P float64 `json:"p"`
	}
	if err := parse(raw, &a); err != nil {
		return nil, err
	}
	return func(c *Ctx, op int, dst []float32) { dst[0] = b2f(c.Rand(op).Float64() >= a.P) }, nil
}}

// labelSolarize: 1 when the image was solarized, for the solarize op.
var labelSolarize = labelKind{n: 1, parse: func(raw json.RawMessage) (func(*Ctx, int, []float32), error) {
	var a struct {
		P float64 `json:"p"`
	}
	if err := parse(raw, &a); err != nil {
		return nil, err
	}
	return func(c *Ctx, op int, dst []float32) { dst[0] = b2f(c.Rand(op).Float64() < a.P) }, nil
}}

// labelBlur: the sigma of the blur, 0 when it did not apply.
var labelBlur = labelKind{n: 1, parse: func(raw json.RawMessage) (func(*Ctx, int, []float32), error) {
	var a struct {
		P     float64    `json:"p"`
		Sigma [2]float64 `json:"sigma"`
	}
	if err := parse(raw, &a); err != nil {
		return nil, err
	}
	if !(a.Sigma[0] > 0 && a.Sigma[0] <= a.Sigma[1]) {
		return nil, fmt.Errorf("sigma %v must be positive (min, max)", a.Sigma)
	}
	return func(c *Ctx, op int, dst []float32) {
		if apply, s := drawBlur(c, op, a.P, a.Sigma[0], a.Sigma[1]); apply {
			dst[0] = float32(s)
		}
	}, nil
}}

// labelRotate: the angle in radians, 0 when the rotation did not apply.
var labelRotate = labelKind{n: 1, parse: func(raw json.RawMessage) (func(*Ctx, int, []float32), error) {
	var a struct {
		P     float64 `json:"p"`
		Angle float64 `json:"angle"`
	}
	if err := parse(raw, &a); err != nil {
		return nil, err
	}
	return func(c *Ctx, op int, dst []float32) {
		if apply, th := drawRotate(c, op, a.P, a.Angle); apply {
			dst[0] = float32(th)
		}
	}, nil
}}

// labelTranslate: the shift (dy, dx) in pixels the translate op drew: the
// image moved by (-dy, -dx).
var labelTranslate = labelKind{n: 2, parse: func(raw json.RawMessage) (func(*Ctx, int, []float32), error) {
	var a struct {
		Padding int `json:"padding"`
	}
	if err := parse(raw, &a); err != nil {
		return nil, err
	}
	if a.Padding < 0 {
		return nil, fmt.Errorf("padding %d must not be negative", a.Padding)
	}
	t := &translate{padding: a.Padding}
	return func(c *Ctx, op int, dst []float32) {
		dy, dx := t.draw(c, op) // the translate op's own draw
		dst[0], dst[1] = float32(dy), float32(dx)
	}, nil
}}

// labelRRC is FFCV-SSL's LabelRandomResizedCrop: a decoder of the image
// field that outputs, as int32, (width, height, top, left, crop height, crop
// width) of the crop the rgb_rrc decoder with the same seed takes.
type labelRRC struct{ scale, ratio [2]float64 }

func newLabelRRC(env Env, raw json.RawMessage) (Op, error) {
	// rgb_rrc's arguments, so one spec describes both.
	var a struct {
		Size  [2]int     `json:"size"`
		Scale [2]float64 `json:"scale"`
		Ratio [2]float64 `json:"ratio"`
	}
	if err := parse(raw, &a); err != nil {
		return nil, err
	}
	if err := needSeed(raw); err != nil {
		return nil, err
	}
	if !(a.Scale[0] > 0 && a.Scale[0] <= a.Scale[1] && a.Ratio[0] > 0 && a.Ratio[0] <= a.Ratio[1]) {
		return nil, fmt.Errorf("bad scale %v or ratio %v", a.Scale, a.Ratio)
	}
	if err := needType(env, field.RGBImage); err != nil {
		return nil, err
	}
	return &labelRRC{scale: a.Scale, ratio: a.Ratio}, nil
}

func (l *labelRRC) Out(Spec) (Spec, error) { return Spec{Shape: []int{6}, DType: "<i4"}, nil }

func (l *labelRRC) Run(c *Ctx, op int, _, out []byte) error {
	im := imageOf(c.Col)
	if im.w < 1 || im.h < 1 {
		return fmt.Errorf("%w: empty %dx%d image", field.ErrData, im.w, im.h)
	}
	rc := RandomResizedCrop(c.Rand(op), im.w, im.h, l.scale, l.ratio)
	for i, v := range []int{im.w, im.h, rc.Min.Y, rc.Min.X, rc.Dy(), rc.Dx()} {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(int32(v)))
	}
	return nil
}
