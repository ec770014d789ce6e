package pipeline

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
)

// torchvision's automatic augmentation policies (transforms.v2:
// RandAugment, TrivialAugmentWide, AutoAugment with its ImageNet, CIFAR-10
// and SVHN policies, AugMix) with their operation sets, magnitude bins and signs, on uint8
// images. augment_op applies one of their operations with a fixed signed
// magnitude, as torchvision's _apply_image_or_video_transform does.

func init() {
	Register("augment_op", newAugmentOp)
	Register("rand_augment", newPolicy("rand_augment"))
	Register("trivial_augment_wide", newPolicy("trivial_augment_wide"))
	Register("auto_augment", newPolicy("auto_augment"))
	Register("augmix", newPolicy("augmix"))
}

// augOps are the operations' names; an op's index is its place here.
var augOps = []string{"Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness",
	"Color", "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize", "Invert"}

const (
	opIdentity = iota
	opShearX
	opShearY
	opTranslateX
	opTranslateY
	opRotate
	opBrightness
	opColor
	opContrast
	opSharpness
	opPosterize
	opSolarize
	opAutoContrast
	opEqualize
	opInvert
)

func augOpIndex(name string) (int, error) {
	for i, n := range augOps {
		if n == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown augmentation %q (one of %v)", name, augOps)
}

// linspace32 is element i of torch.linspace(start, end, steps) in float32.
func linspace32(start, end float64, steps, i int) float64 {
	if steps == 1 {
		return float64(float32(start))
	}
	s, e := float32(start), float32(end)
	step := (e - s) / float32(steps-1)
	if i < steps/2 {
		return float64(s + float32(step*float32(i)))
	}
	return float64(e - float32(step*float32(steps-i-1)))
}

// space is a policy's magnitude ranges: the largest shear, translation
// (pixels, or a fraction of the side), rotation (degrees) and enhancement,
// and the Posterize bins' top and span (top - i/((bins-1)/span) bits).
type space struct {
	shear, translate, rotate, enhance float64
	translateFrac                     bool // translate is a fraction of the side (else pixels)
	posterTop, posterSpan             float64
}

var (
	// RandAugment, AutoAugment: translate 150/331 of the side.
	spaceRA = space{shear: 0.3, translate: 150.0 / 331.0, translateFrac: true, rotate: 30, enhance: 0.9, posterTop: 8, posterSpan: 4}
	spaceTA = space{shear: 0.99, translate: 32, rotate: 135, enhance: 0.99, posterTop: 8, posterSpan: 6}
	spaceAM = space{shear: 0.3, translate: 1.0 / 3, translateFrac: true, rotate: 30, enhance: 0.9, posterTop: 4, posterSpan: 4}
)

// magnitude is op's magnitude in bin i of bins for an h×w image, and
// whether it is signed.
func (s space) magnitude(op, i, bins, h, w int) (float64, bool) {
	switch op {
	case opShearX, opShearY:
		return linspace32(0, s.shear, bins, i), true
	case opTranslateX, opTranslateY:
		end := s.translate
		if s.translateFrac {
			side := w
			if op == opTranslateY {
				side = h
			}
			end = s.translate * float64(side)
		}
		return linspace32(0, end, bins, i), true
	case opRotate:
		return linspace32(0, s.rotate, bins, i), true
	case opBrightness, opColor, opContrast, opSharpness:
		return linspace32(0, s.enhance, bins, i), true
	case opPosterize:
		d := float32(float64(bins-1) / s.posterSpan)
		return math.RoundToEven(float64(float32(s.posterTop) - float32(float32(i)/d))), false
	case opSolarize:
		return linspace32(1, 0, bins, i), false
	}
	return 0, false
}

// augScratch is a worker's buffers for the policies.
type augScratch struct {
	tmp, aug []byte
	mix      []float32
	weights  []float64
}

func augScratchOf(c *Ctx, n int) *augScratch {
	s := c.State("augment", func() any { return new(augScratch) }).(*augScratch)
	s.tmp = Grow(s.tmp, n)
	return s
}

// geom is how the geometric operations sample.
type geom struct {
	bilinear bool
	fill     []float32
}

// applyAug applies op with magnitude mag to img (h, w, ch) in place; tmp
// has img's size.
func applyAug(img, tmp []byte, h, w, ch, op int, mag float64, g geom) {
	switch op {
	case opTranslateX, opTranslateY:
		if imgproc.Shiftable(g.bilinear, g.fill) {
			// Beyond a side everything is fill; the clamp keeps int() defined.
			lim := float64(w + h)
			d := int(min(max(math.Trunc(mag), -lim), lim))
			if op == opTranslateX {
				imgproc.Shift(tmp, img, h, w, ch, d, 0, g.fill)
			} else {
				imgproc.Shift(tmp, img, h, w, ch, 0, d, g.fill)
			}
			copy(img, tmp)
			return
		}
		fallthrough
	case opShearX, opShearY:
		var m [6]float64
		switch op {
		case opShearX: // about the top-left corner
			m = imgproc.InvAffine(-0.5*float64(w), -0.5*float64(h), 0, 0, 0, 1, math.Atan(mag)*180/math.Pi, 0)
		case opShearY:
			m = imgproc.InvAffine(-0.5*float64(w), -0.5*float64(h), 0, 0, 0, 1, 0, math.Atan(mag)*180/math.Pi)
		case opTranslateX:
			m = imgproc.InvAffine(0, 0, 0, math.Trunc(mag), 0, 1, 0, 0)
		default:
			m = imgproc.InvAffine(0, 0, 0, 0, math.Trunc(mag), 1, 0, 0)
		}
		imgproc.Warp(tmp, img, h, w, ch, m, g.bilinear, g.fill)
		copy(img, tmp)
	case opRotate:
		imgproc.Rotate(tmp, img, h, w, ch, mag, g.bilinear, g.fill)
		copy(img, tmp)
	case opBrightness:
		imgproc.Brightness(img, 1+mag)
	case opColor:
		imgproc.Saturation(img, ch, 1+mag, nil)
	case opContrast:
		imgproc.Contrast(img, ch, 1+mag)
	case opSharpness:
		imgproc.Sharpen(img, tmp, h, w, ch, 1+mag, nil)
	case opPosterize:
		imgproc.Posterize(img, int(mag))
	case opSolarize:
		imgproc.Solarize(img, 255*mag)
	case opAutoContrast:
		imgproc.Autocontrast(img, ch)
	case opEqualize:
		imgproc.Equalize(img, ch)
	case opInvert:
		imgproc.Invert(img)
	}
}

// geomArgs are the interpolation and fill every policy takes.
type geomArgs struct {
	Interpolation string    `json:"interpolation"`
	Fill          []float32 `json:"fill"`
}

func (a geomArgs) geom() (geom, error) {
	bil, err := ParseInterp(a.Interpolation)
	return geom{bilinear: bil, fill: a.Fill}, err
}

// needAugImage checks in is an image the policies take: 1 or 3 channels.
func needAugImage(in Spec, g geom) error {
	if err := NeedImage(in); err != nil {
		return err
	}
	if ch := in.Shape[2]; ch != 1 && ch != 3 {
		return fmt.Errorf("needs 1 or 3 channels, got %d", ch)
	}
	return CheckFill(g.fill, in.Shape[2])
}

// augmentOp is one policy operation with a fixed signed magnitude.
type augmentOp struct {
	SameImage
	op   int
	mag  float64
	g    geom
	spec Spec
}

func newAugmentOp(_ Env, raw json.RawMessage) (Op, error) {
	var a struct {
		Name      string  `json:"name"`
		Magnitude float64 `json:"magnitude"`
		geomArgs
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	op, err := augOpIndex(a.Name)
	if err != nil {
		return nil, err
	}
	g, err := a.geom()
	if err != nil {
		return nil, err
	}
	m := a.Magnitude
	switch op {
	case opPosterize:
		if b := int(m); b < 0 || b > 8 {
			return nil, fmt.Errorf("magnitude %v: Posterize needs 0 to 8 bits", m)
		}
	case opSolarize:
		if m < 0 || m > 1 {
			return nil, fmt.Errorf("magnitude %v: Solarize needs a threshold fraction in [0, 1]", m)
		}
	case opBrightness, opColor, opContrast, opSharpness:
		if 1+m < 0 {
			return nil, fmt.Errorf("magnitude %v: %s needs a factor 1+magnitude >= 0", m, a.Name)
		}
	case opShearX, opShearY, opTranslateX, opTranslateY, opRotate:
		if math.IsNaN(m) || math.IsInf(m, 0) {
			return nil, fmt.Errorf("magnitude %v must be finite", m)
		}
	}
	return &augmentOp{op: op, mag: m, g: g}, nil
}

func (t *augmentOp) Out(in Spec) (Spec, error) { t.spec = in; return in, needAugImage(in, t.g) }

func (t *augmentOp) Run(c *Ctx, _ int, in, out []byte) error {
	CopyIfNeeded(out, in)
	h, w, ch := t.spec.Shape[0], t.spec.Shape[1], t.spec.Shape[2]
	applyAug(out, augScratchOf(c, len(out)).tmp, h, w, ch, t.op, t.mag, t.g)
	return nil
}

// policy is one of the four automatic augmentations.
type policy struct {
	SameImage
	kind     string
	numOps   int // RandAugment
	mag      int // RandAugment's bin
	bins     int
	severity int // AugMix
	width    int
	depth    int
	alpha    float64
	ops      []int       // the operations drawn from
	subs     []subPolicy // AutoAugment's policy
	g        geom
	spec     Spec
}

var (
	raOps    = []int{opIdentity, opShearX, opShearY, opTranslateX, opTranslateY, opRotate, opBrightness, opColor, opContrast, opSharpness, opPosterize, opSolarize, opAutoContrast, opEqualize}
	amOps    = []int{opShearX, opShearY, opTranslateX, opTranslateY, opRotate, opPosterize, opSolarize, opAutoContrast, opEqualize, opBrightness, opColor, opContrast, opSharpness}
	amPartly = 9 // AugMix without all_ops: the first 9 of amOps
)

// imagenetPolicy, cifar10Policy and svhnPolicy are AutoAugment's learnt
// policies: pairs of (op, probability, magnitude bin of 10; -1 for none).
type subPolicy [2]struct {
	op  int
	p   float64
	bin int
}

var imagenetPolicy = []subPolicy{
	{{opPosterize, 0.4, 8}, {opRotate, 0.6, 9}},
	{{opSolarize, 0.6, 5}, {opAutoContrast, 0.6, -1}},
	{{opEqualize, 0.8, -1}, {opEqualize, 0.6, -1}},
	{{opPosterize, 0.6, 7}, {opPosterize, 0.6, 6}},
	{{opEqualize, 0.4, -1}, {opSolarize, 0.2, 4}},
	{{opEqualize, 0.4, -1}, {opRotate, 0.8, 8}},
	{{opSolarize, 0.6, 3}, {opEqualize, 0.6, -1}},
	{{opPosterize, 0.8, 5}, {opEqualize, 1.0, -1}},
	{{opRotate, 0.2, 3}, {opSolarize, 0.6, 8}},
	{{opEqualize, 0.6, -1}, {opPosterize, 0.4, 6}},
	{{opRotate, 0.8, 8}, {opColor, 0.4, 0}},
	{{opRotate, 0.4, 9}, {opEqualize, 0.6, -1}},
	{{opEqualize, 0.0, -1}, {opEqualize, 0.8, -1}},
	{{opInvert, 0.6, -1}, {opEqualize, 1.0, -1}},
	{{opColor, 0.6, 4}, {opContrast, 1.0, 8}},
	{{opRotate, 0.8, 8}, {opColor, 1.0, 2}},
	{{opColor, 0.8, 8}, {opSolarize, 0.8, 7}},
	{{opSharpness, 0.4, 7}, {opInvert, 0.6, -1}},
	{{opShearX, 0.6, 5}, {opEqualize, 1.0, -1}},
	{{opColor, 0.4, 0}, {opEqualize, 0.6, -1}},
	{{opEqualize, 0.4, -1}, {opSolarize, 0.2, 4}},
	{{opSolarize, 0.6, 5}, {opAutoContrast, 0.6, -1}},
	{{opInvert, 0.6, -1}, {opEqualize, 1.0, -1}},
	{{opColor, 0.6, 4}, {opContrast, 1.0, 8}},
	{{opEqualize, 0.8, -1}, {opEqualize, 0.6, -1}},
}

var cifar10Policy = []subPolicy{
	{{opInvert, 0.1, -1}, {opContrast, 0.2, 6}},
	{{opRotate, 0.7, 2}, {opTranslateX, 0.3, 9}},
	{{opSharpness, 0.8, 1}, {opSharpness, 0.9, 3}},
	{{opShearY, 0.5, 8}, {opTranslateY, 0.7, 9}},
	{{opAutoContrast, 0.5, -1}, {opEqualize, 0.9, -1}},
	{{opShearY, 0.2, 7}, {opPosterize, 0.3, 7}},
	{{opColor, 0.4, 3}, {opBrightness, 0.6, 7}},
	{{opSharpness, 0.3, 9}, {opBrightness, 0.7, 9}},
	{{opEqualize, 0.6, -1}, {opEqualize, 0.5, -1}},
	{{opContrast, 0.6, 7}, {opSharpness, 0.6, 5}},
	{{opColor, 0.7, 7}, {opTranslateX, 0.5, 8}},
	{{opEqualize, 0.3, -1}, {opAutoContrast, 0.4, -1}},
	{{opTranslateY, 0.4, 3}, {opSharpness, 0.2, 6}},
	{{opBrightness, 0.9, 6}, {opColor, 0.2, 8}},
	{{opSolarize, 0.5, 2}, {opInvert, 0.0, -1}},
	{{opEqualize, 0.2, -1}, {opAutoContrast, 0.6, -1}},
	{{opEqualize, 0.2, -1}, {opEqualize, 0.6, -1}},
	{{opColor, 0.9, 9}, {opEqualize, 0.6, -1}},
	{{opAutoContrast, 0.8, -1}, {opSolarize, 0.2, 8}},
	{{opBrightness, 0.1, 3}, {opColor, 0.7, 0}},
	{{opSolarize, 0.4, 5}, {opAutoContrast, 0.9, -1}},
	{{opTranslateY, 0.9, 9}, {opTranslateY, 0.7, 9}},
	{{opAutoContrast, 0.9, -1}, {opSolarize, 0.8, 3}},
	{{opEqualize, 0.8, -1}, {opInvert, 0.1, -1}},
	{{opTranslateY, 0.7, 9}, {opAutoContrast, 0.9, -1}},
}

var svhnPolicy = []subPolicy{
	{{opShearX, 0.9, 4}, {opInvert, 0.2, -1}},
	{{opShearY, 0.9, 8}, {opInvert, 0.7, -1}},
	{{opEqualize, 0.6, -1}, {opSolarize, 0.6, 6}},
	{{opInvert, 0.9, -1}, {opEqualize, 0.6, -1}},
	{{opEqualize, 0.6, -1}, {opRotate, 0.9, 3}},
	{{opShearX, 0.9, 4}, {opAutoContrast, 0.8, -1}},
	{{opShearY, 0.9, 8}, {opInvert, 0.4, -1}},
	{{opShearY, 0.9, 5}, {opSolarize, 0.2, 6}},
	{{opInvert, 0.9, -1}, {opAutoContrast, 0.8, -1}},
	{{opEqualize, 0.6, -1}, {opRotate, 0.9, 3}},
	{{opShearX, 0.9, 4}, {opSolarize, 0.3, 3}},
	{{opShearY, 0.8, 8}, {opInvert, 0.7, -1}},
	{{opEqualize, 0.9, -1}, {opTranslateY, 0.6, 6}},
	{{opInvert, 0.9, -1}, {opEqualize, 0.6, -1}},
	{{opContrast, 0.3, 3}, {opRotate, 0.8, 4}},
	{{opInvert, 0.8, -1}, {opTranslateY, 0.0, 2}},
	{{opShearY, 0.7, 6}, {opSolarize, 0.4, 8}},
	{{opInvert, 0.6, -1}, {opRotate, 0.8, 4}},
	{{opShearY, 0.3, 7}, {opTranslateX, 0.9, 3}},
	{{opShearX, 0.1, 6}, {opInvert, 0.6, -1}},
	{{opSolarize, 0.7, 2}, {opTranslateY, 0.6, 7}},
	{{opShearY, 0.8, 4}, {opInvert, 0.8, -1}},
	{{opShearX, 0.7, 9}, {opTranslateY, 0.8, 3}},
	{{opShearY, 0.8, 5}, {opAutoContrast, 0.7, -1}},
	{{opShearX, 0.7, 2}, {opInvert, 0.1, -1}},
}

// autoPolicies are AutoAugment's policies by name.
var autoPolicies = map[string][]subPolicy{"imagenet": imagenetPolicy, "cifar10": cifar10Policy, "svhn": svhnPolicy}

func newPolicy(kind string) Factory {
	return func(_ Env, raw json.RawMessage) (Op, error) {
		var a struct {
			NumOps       *int     `json:"num_ops"`
			Magnitude    *int     `json:"magnitude"`
			Bins         *int     `json:"num_magnitude_bins"`
			Policy       *string  `json:"policy"`
			Severity     *int     `json:"severity"`
			MixtureWidth *int     `json:"mixture_width"`
			ChainDepth   *int     `json:"chain_depth"`
			Alpha        *float64 `json:"alpha"`
			AllOps       *bool    `json:"all_ops"`
			geomArgs
		}
		if err := Parse(raw, &a); err != nil {
			return nil, err
		}
		g, err := a.geom()
		if err != nil {
			return nil, err
		}
		p := &policy{kind: kind, g: g}
		// Each policy takes its own arguments only.
		given := map[string]bool{"num_ops": a.NumOps != nil, "magnitude": a.Magnitude != nil,
			"num_magnitude_bins": a.Bins != nil, "policy": a.Policy != nil, "severity": a.Severity != nil,
			"mixture_width": a.MixtureWidth != nil, "chain_depth": a.ChainDepth != nil, "alpha": a.Alpha != nil,
			"all_ops": a.AllOps != nil}
		allowed := map[string][]string{
			"rand_augment":         {"num_ops", "magnitude", "num_magnitude_bins"},
			"trivial_augment_wide": {"num_magnitude_bins"},
			"auto_augment":         {"policy"},
			"augmix":               {"severity", "mixture_width", "chain_depth", "alpha", "all_ops"},
		}[kind]
		for k, ok := range given {
			if ok && !contains(allowed, k) {
				return nil, fmt.Errorf("%s takes no %s", kind, k)
			}
		}
		or := func(v *int, d int) int {
			if v != nil {
				return *v
			}
			return d
		}
		switch kind {
		case "rand_augment":
			p.numOps, p.mag, p.bins, p.ops = or(a.NumOps, 2), or(a.Magnitude, 9), or(a.Bins, 31), raOps
			if p.numOps < 0 {
				return nil, fmt.Errorf("num_ops %d must not be negative", p.numOps)
			}
			if p.bins < 2 {
				return nil, fmt.Errorf("num_magnitude_bins %d must be at least 2", p.bins)
			}
			if p.mag < 0 || p.mag >= p.bins {
				return nil, fmt.Errorf("magnitude %d must be in [0, num_magnitude_bins-1 = %d]", p.mag, p.bins-1)
			}
		case "trivial_augment_wide":
			p.bins, p.ops = or(a.Bins, 31), raOps
			if p.bins < 2 {
				return nil, fmt.Errorf("num_magnitude_bins %d must be at least 2", p.bins)
			}
		case "auto_augment":
			p.subs = imagenetPolicy
			if a.Policy != nil {
				if p.subs = autoPolicies[*a.Policy]; p.subs == nil {
					return nil, fmt.Errorf("policy %q must be imagenet, cifar10 or svhn", *a.Policy)
				}
			}
		case "augmix":
			p.severity, p.width, p.depth = or(a.Severity, 3), or(a.MixtureWidth, 3), or(a.ChainDepth, -1)
			p.alpha, p.ops = 1, amOps
			if a.Alpha != nil {
				p.alpha = *a.Alpha
			}
			if a.AllOps != nil && !*a.AllOps {
				p.ops = amOps[:amPartly]
			}
			if p.severity < 1 || p.severity > 10 {
				return nil, fmt.Errorf("severity %d must be in [1, 10]", p.severity)
			}
			if p.width < 1 {
				return nil, fmt.Errorf("mixture_width %d must be positive", p.width)
			}
			if !(p.alpha > 0) {
				return nil, fmt.Errorf("alpha %v must be positive", p.alpha)
			}
		}
		return p, nil
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *policy) Out(in Spec) (Spec, error) { p.spec = in; return in, needAugImage(in, p.g) }

// signed draws the sign of a signed magnitude: negative half the time.
func signed(r *rand.Rand, m float64, isSigned bool) float64 {
	if isSigned && r.Float64() < 0.5 {
		return -m
	}
	return m
}

func (p *policy) Run(c *Ctx, op int, in, out []byte) error {
	CopyIfNeeded(out, in)
	h, w, ch := p.spec.Shape[0], p.spec.Shape[1], p.spec.Shape[2]
	s := augScratchOf(c, len(out))
	r := c.Rand(op)
	switch p.kind {
	case "rand_augment":
		for i := 0; i < p.numOps; i++ {
			o := p.ops[r.IntN(len(p.ops))]
			m, sg := spaceRA.magnitude(o, p.mag, p.bins, h, w)
			applyAug(out, s.tmp, h, w, ch, o, signed(r, m, sg), p.g)
		}
	case "trivial_augment_wide":
		o := p.ops[r.IntN(len(p.ops))]
		m, sg := spaceTA.magnitude(o, r.IntN(p.bins), p.bins, h, w)
		applyAug(out, s.tmp, h, w, ch, o, signed(r, m, sg), p.g)
	case "auto_augment":
		sub := p.subs[r.IntN(len(p.subs))]
		for _, step := range sub {
			if !(r.Float64() < step.p) {
				continue
			}
			m, sg := 0.0, false
			if step.bin >= 0 {
				m, sg = spaceRA.magnitude(step.op, step.bin, 10, h, w)
			}
			applyAug(out, s.tmp, h, w, ch, step.op, signed(r, m, sg), p.g)
		}
	case "augmix":
		p.augmix(r, s, out, h, w, ch)
	}
	return nil
}

// augmix mixes the image (weight m0) with mixture_width augmentation
// chains (weights m1·Dirichlet), in float32, truncating to uint8 as
// torchvision's final cast does.
func (p *policy) augmix(r *rand.Rand, s *augScratch, img []byte, h, w, ch int) {
	var m [2]float64
	dirichlet(r, p.alpha, m[:])
	if cap(s.weights) < p.width {
		s.weights = make([]float64, p.width)
	}
	weights := s.weights[:p.width]
	dirichlet(r, p.alpha, weights)
	if cap(s.mix) < len(img) {
		s.mix = make([]float32, len(img))
	}
	s.aug = Grow(s.aug, len(img))
	mix, aug := s.mix[:len(img)], s.aug
	m0 := float32(m[0])
	for i, v := range img {
		mix[i] = float32(v) * m0
	}
	for k := 0; k < p.width; k++ {
		copy(aug, img)
		depth := p.depth
		if depth <= 0 {
			depth = 1 + r.IntN(3)
		}
		for d := 0; d < depth; d++ {
			o := p.ops[r.IntN(len(p.ops))]
			mag, sg := spaceAM.magnitude(o, r.IntN(p.severity), 10, h, w)
			applyAug(aug, s.tmp, h, w, ch, o, signed(r, mag, sg), p.g)
		}
		wk := float32(float32(weights[k]) * float32(m[1]))
		for i, v := range aug {
			mix[i] += float32(wk * float32(v))
		}
	}
	for i, v := range mix {
		img[i] = imgproc.TruncU8(v)
	}
}

// dirichlet fills dst with a Dirichlet(alpha, ..., alpha) sample
// (normalised Gamma draws; gamma is mixup's).
func dirichlet(r *rand.Rand, alpha float64, dst []float64) {
	var sum float64
	for i := range dst {
		dst[i] = Gamma(r, alpha)
		sum += dst[i]
	}
	if sum == 0 { // every gamma underflowed (tiny alpha): one-hot, as the limit
		dst[r.IntN(len(dst))] = 1
		return
	}
	for i := range dst {
		dst[i] /= sum
	}
}
