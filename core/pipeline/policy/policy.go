// Package policy registers torchvision's automatic augmentation policies
// (transforms.v2: rand_augment, trivial_augment_wide, auto_augment with its
// ImageNet, CIFAR-10 and SVHN policies, augmix) with their operation sets,
// magnitude bins and signs, on uint8 images; and augment_op, one of their
// operations with a fixed signed magnitude, as torchvision's
// _apply_image_or_video_transform does. The pixel work is core/imgproc's.
package policy

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

func init() {
	pipeline.Register("augment_op", newAugmentOp)
	pipeline.Register("rand_augment", newPolicy("rand_augment"))
	pipeline.Register("trivial_augment_wide", newPolicy("trivial_augment_wide"))
	pipeline.Register("auto_augment", newPolicy("auto_augment"))
	pipeline.Register("augmix", newPolicy("augmix"))
}

// policy is one of the four automatic augmentations.
type policy struct {
	pipeline.SameImage
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
	tabs     *tables // of every Color and Sharpness factor it can draw
	spec     pipeline.Spec
}

var (
	raOps    = []int{opIdentity, opShearX, opShearY, opTranslateX, opTranslateY, opRotate, opBrightness, opColor, opContrast, opSharpness, opPosterize, opSolarize, opAutoContrast, opEqualize}
	amOps    = []int{opShearX, opShearY, opTranslateX, opTranslateY, opRotate, opPosterize, opSolarize, opAutoContrast, opEqualize, opBrightness, opColor, opContrast, opSharpness}
	amPartly = 9 // AugMix without all_ops: the first 9 of amOps
)

func newPolicy(kind string) pipeline.Factory {
	return func(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
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
		if err := pipeline.Parse(raw, &a); err != nil {
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
		p.buildTables()
		if kind == "augmix" {
			return p, nil
		}
		return geoPolicy{p}, nil
	}
}

// buildTables builds the tables of every Color and Sharpness factor the
// policy can draw: those of each bin it draws them in, both signs.
func (p *policy) buildTables() {
	p.tabs = newTables()
	switch p.kind {
	case "rand_augment":
		for _, op := range p.ops {
			p.tabs.addBin(spaceRA, op, p.mag, p.bins)
		}
	case "trivial_augment_wide":
		for _, op := range p.ops {
			for i := range p.bins {
				p.tabs.addBin(spaceTA, op, i, p.bins)
			}
		}
	case "auto_augment":
		for _, sub := range p.subs {
			for _, step := range sub {
				if step.bin >= 0 {
					p.tabs.addBin(spaceRA, step.op, step.bin, 10)
				}
			}
		}
	case "augmix":
		for _, op := range p.ops {
			for i := range p.severity {
				p.tabs.addBin(spaceAM, op, i, 10)
			}
		}
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

func (p *policy) Out(in pipeline.Spec) (pipeline.Spec, error) {
	p.spec = in
	return in, needAugImage(in, p.g)
}

// signed draws the sign of a signed magnitude: negative half the time.
func signed(r *rand.Rand, m float64, isSigned bool) float64 {
	if isSigned && r.Float64() < 0.5 {
		return -m
	}
	return m
}

func (p *policy) Run(c *pipeline.Ctx, op int, in, out []byte) error {
	pipeline.CopyIfNeeded(out, in)
	h, w, ch := p.spec.Shape[0], p.spec.Shape[1], p.spec.Shape[2]
	s := augScratchOf(c, len(out))
	r := c.Rand(op)
	if p.kind == "augmix" {
		p.augmix(r, s, out, h, w, ch)
		return nil
	}
	p.walk(r, h, w, func(o int, m float64) { applyAug(out, s.tmp, h, w, ch, o, m, p.g, p.tabs) })
	return nil
}

// walk makes the draws of a policy that applies one operation after
// another (all but augmix), calling f with each operation applied and its
// signed magnitude: Run applies them, Place maps them.
func (p *policy) walk(r *rand.Rand, h, w int, f func(op int, mag float64)) {
	switch p.kind {
	case "rand_augment":
		for i := 0; i < p.numOps; i++ {
			o := p.ops[r.IntN(len(p.ops))]
			m, sg := spaceRA.magnitude(o, p.mag, p.bins, h, w)
			f(o, signed(r, m, sg))
		}
	case "trivial_augment_wide":
		o := p.ops[r.IntN(len(p.ops))]
		m, sg := spaceTA.magnitude(o, r.IntN(p.bins), p.bins, h, w)
		f(o, signed(r, m, sg))
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
			f(step.op, signed(r, m, sg))
		}
	}
}

// geoPolicy is a policy targets follow (all but augmix, which blends
// chains of operations): its Place composes the maps of the operations it
// draws.
type geoPolicy struct{ *policy }

func (p geoPolicy) Place(c *pipeline.Ctx, key, w, h int) (pipeline.Step, error) {
	st, moved := pipeline.Same(w, h), false
	p.walk(c.Rand(key), h, w, func(o int, m float64) {
		s, ok := augStep(o, m, w, h)
		switch {
		case !ok:
		case moved:
			st = st.Then(s)
		default:
			st, moved = s, true
		}
	})
	return st, nil
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
	s.aug = pipeline.Grow(s.aug, len(img))
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
			applyAug(aug, s.tmp, h, w, ch, o, signed(r, mag, sg), p.g, p.tabs)
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
// (normalised pipeline.Gamma draws).
func dirichlet(r *rand.Rand, alpha float64, dst []float64) {
	var sum float64
	for i := range dst {
		dst[i] = pipeline.Gamma(r, alpha)
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
