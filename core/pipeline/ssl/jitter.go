package ssl

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// FFCV-SSL's colour jitter, with torchvision's ColorJitter semantics.

// jitter is ColorJitter's configuration: a (min, max) factor range per
// component (nil: left out), and the probability P of jittering at all.
type jitter struct {
	P                                     float64
	Brightness, Contrast, Saturation, Hue *[2]float64
}

// parseJitter reads color_jitter's arguments: p (Python's jitter_prob),
// and each component as torchvision's ColorJitter takes it, a number or a
// (min, max) pair, or null.
func parseJitter(raw json.RawMessage) (jitter, error) {
	var a struct {
		P          float64         `json:"p"`
		Brightness json.RawMessage `json:"brightness"`
		Contrast   json.RawMessage `json:"contrast"`
		Saturation json.RawMessage `json:"saturation"`
		Hue        json.RawMessage `json:"hue"`
	}
	var j jitter
	if err := pipeline.Parse(raw, &a); err != nil {
		return j, err
	}
	if err := pipeline.Prob("jitter_prob", a.P); err != nil {
		return j, err
	}
	j.P = a.P
	var err error
	for _, c := range []struct {
		name string
		raw  json.RawMessage
		dst  **[2]float64
	}{{"brightness", a.Brightness, &j.Brightness}, {"contrast", a.Contrast, &j.Contrast},
		{"saturation", a.Saturation, &j.Saturation}, {"hue", a.Hue, &j.Hue}} {
		if *c.dst, err = jitterRange(c.name, c.raw); err != nil {
			return j, err
		}
	}
	return j, nil
}

// jitterRange is torchvision's ColorJitter range of a component: a number
// v is the factor range [max(0, 1-v), 1+v] (for hue, the shift range
// [-v, v], v at most 0.5), a pair is (min, max) (factors not negative, hue
// within [-0.5, 0.5]). nil, the component left out, for null and for the
// identity range.
func jitterRange(name string, raw json.RawMessage) (*[2]float64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	hue := name == "hue"
	center, want := 1.0, "a number >= 0 or a (min, max) pair with 0 <= min <= max"
	if hue {
		center, want = 0, "a number in [0, 0.5] or a (min, max) pair with -0.5 <= min <= max <= 0.5"
	}
	var r [2]float64
	var v float64
	if json.Unmarshal(raw, &v) == nil {
		if !(v >= 0) || hue && v > 0.5 || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s %s must be %s", name, raw, want)
		}
		r = [2]float64{max(center-v, 0), center + v}
		if hue {
			r[0] = -v
		}
	} else if json.Unmarshal(raw, &r) != nil || !(r[0] <= r[1]) || !hue && !(r[0] >= 0) ||
		hue && !(r[0] >= -0.5 && r[1] <= 0.5) {
		return nil, fmt.Errorf("%s %s must be %s", name, raw, want)
	}
	if r[0] == center && r[1] == center {
		return nil, nil
	}
	return &r, nil
}

// jitterDraw is one sample's jitter: whether it applies, the order of the
// four adjustments and their factors (brightness, contrast, saturation, hue;
// identity values for those left out).
type jitterDraw struct {
	apply   bool
	order   [4]int
	factors [4]float64
}

func (j *jitter) draw(c *pipeline.Ctx, op int) jitterDraw {
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
	pipeline.SameImage
	pipeline.PhotometricOp
	jitter
	spec pipeline.Spec
}

func newColorJitter(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	j, err := parseJitter(raw)
	if err != nil {
		return nil, err
	}
	return &colorJitter{jitter: j}, nil
}

func (j *colorJitter) Out(in pipeline.Spec) (pipeline.Spec, error) {
	j.spec = in
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	if ch := in.Shape[2]; ch != 1 && ch != 3 {
		return in, fmt.Errorf("color jitter needs 1 or 3 channels, got %d", ch)
	}
	return in, nil
}

func (j *colorJitter) Run(c *pipeline.Ctx, op int, in, out []byte) error {
	pipeline.CopyIfNeeded(out, in)
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

func (j *colorJitter) Report(c *pipeline.Ctx, key int, dst []float32) {
	d := j.draw(c, key)
	if !d.apply {
		d.factors = [4]float64{1, 1, 1, 0}
	}
	for i, f := range d.factors {
		dst[i] = float32(f)
	}
}
