package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// The policies' operations and magnitude spaces.

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

// OpNames are the names of the policies' operations, as torchvision
// names them: what augment_op's name takes.
func OpNames() []string { return slices.Clone(augOps) }

func augOpIndex(name string) (int, error) {
	for i, n := range augOps {
		if n == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("name %q must be one of %s", name, strings.Join(augOps, ", "))
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
		return imgproc.Linspace32(0, s.shear, bins, i), true
	case opTranslateX, opTranslateY:
		end := s.translate
		if s.translateFrac {
			side := w
			if op == opTranslateY {
				side = h
			}
			end = s.translate * float64(side)
		}
		return imgproc.Linspace32(0, end, bins, i), true
	case opRotate:
		return imgproc.Linspace32(0, s.rotate, bins, i), true
	case opBrightness, opColor, opContrast, opSharpness:
		return imgproc.Linspace32(0, s.enhance, bins, i), true
	case opPosterize:
		d := float32(float64(bins-1) / s.posterSpan)
		return math.RoundToEven(float64(float32(s.posterTop) - float32(float32(i)/d))), false
	case opSolarize:
		return imgproc.Linspace32(1, 0, bins, i), false
	}
	return 0, false
}

// augScratch is a worker's buffers for the policies.
type augScratch struct {
	tmp, aug []byte
	mix      []float32
	weights  []float64
}

func augScratchOf(c *pipeline.Ctx, n int) *augScratch {
	s := c.State("augment", func() any { return new(augScratch) }).(*augScratch)
	s.tmp = pipeline.Grow(s.tmp, n)
	return s
}

// geom is how the geometric operations sample.
type geom struct {
	bilinear bool
	fill     []float32
}

// applyAug applies op with magnitude mag to img (h, w, ch) in place; tmp
// has img's size, and tabs (nil: none) the op's factor tables.
func applyAug(img, tmp []byte, h, w, ch, op int, mag float64, g geom, tabs *tables) {
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
		imgproc.Saturation(img, ch, 1+mag, tabs.saturation(1+mag))
	case opContrast:
		imgproc.Contrast(img, ch, 1+mag)
	case opSharpness:
		imgproc.Sharpen(img, tmp, h, w, ch, 1+mag, tabs.sharpen(1+mag))
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

// augStep is the map of op with magnitude mag on a w×h image, as
// applyAug moves its pixels: translations axis-aligned, shears (about the
// top-left corner) and rotations (about the centre) torchvision's warps;
// ok false for the operations that move nothing.
func augStep(op int, mag float64, w, h int) (s pipeline.Step, ok bool) {
	var m [6]float64
	switch op {
	case opTranslateX:
		return pipeline.Step{SX: 1, TX: math.Trunc(mag), SY: 1, W: w, H: h}, true
	case opTranslateY:
		return pipeline.Step{SX: 1, SY: 1, TY: math.Trunc(mag), W: w, H: h}, true
	case opShearX:
		m = imgproc.InvAffine(-0.5*float64(w), -0.5*float64(h), 0, 0, 0, 1, math.Atan(mag)*180/math.Pi, 0)
	case opShearY:
		m = imgproc.InvAffine(-0.5*float64(w), -0.5*float64(h), 0, 0, 0, 1, 0, math.Atan(mag)*180/math.Pi)
	case opRotate:
		if math.Mod(mag, 360) == 0 {
			return pipeline.Same(w, h), false
		}
		m = imgproc.InvAffine(0, 0, -mag, 0, 0, 1, 0, 0)
	default:
		return pipeline.Same(w, h), false
	}
	return pipeline.WarpStep(pipeline.Centred(m, w, h), 1, w, h), true
}

// geomArgs are the interpolation and fill every policy takes.
type geomArgs struct {
	Interpolation string    `json:"interpolation"`
	Fill          []float32 `json:"fill"`
}

func (a geomArgs) geom() (geom, error) {
	bil, err := pipeline.ParseInterp(a.Interpolation)
	return geom{bilinear: bil, fill: a.Fill}, err
}

// needAugImage checks in is an image the policies take: 1 or 3 channels.
func needAugImage(in pipeline.Spec, g geom) error {
	if err := pipeline.NeedImage(in); err != nil {
		return err
	}
	if ch := in.Shape[2]; ch != 1 && ch != 3 {
		return fmt.Errorf("needs 1 or 3 channels, got %d", ch)
	}
	return pipeline.CheckFill(g.fill, in.Shape[2])
}

// augmentOp is one policy operation with a fixed signed magnitude.
type augmentOp struct {
	pipeline.SameImage
	op   int
	mag  float64
	g    geom
	tabs *tables // its factor's, for Color and Sharpness
	spec pipeline.Spec
}

func newAugmentOp(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		Name      string  `json:"name"`
		Magnitude float64 `json:"magnitude"`
		geomArgs
	}
	if err := pipeline.Parse(raw, &a); err != nil {
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
		if !(m >= 0 && m < 9) {
			return nil, fmt.Errorf("magnitude %v: Posterize needs 0 to 8 bits", m)
		}
	case opSolarize:
		if !(m >= 0 && m <= 1) {
			return nil, fmt.Errorf("magnitude %v: Solarize needs a threshold fraction in [0, 1]", m)
		}
	case opBrightness, opColor, opContrast, opSharpness:
		if !(1+m >= 0) || math.IsInf(m, 0) {
			return nil, fmt.Errorf("magnitude %v: %s needs a factor 1+magnitude >= 0", m, a.Name)
		}
	case opShearX, opShearY, opTranslateX, opTranslateY, opRotate:
		if math.IsNaN(m) || math.IsInf(m, 0) {
			return nil, fmt.Errorf("magnitude %v must be finite", m)
		}
	}
	t := &augmentOp{op: op, mag: m, g: g, tabs: newTables()}
	t.tabs.add(op, 1+m)
	return t, nil
}

func (t *augmentOp) Out(in pipeline.Spec) (pipeline.Spec, error) {
	t.spec = in
	return in, needAugImage(in, t.g)
}

func (t *augmentOp) Place(_ *pipeline.Ctx, _, w, h int) (pipeline.Step, error) {
	s, _ := augStep(t.op, t.mag, w, h)
	return s, nil
}

func (t *augmentOp) Run(c *pipeline.Ctx, _ int, in, out []byte) error {
	pipeline.CopyIfNeeded(out, in)
	h, w, ch := t.spec.Shape[0], t.spec.Shape[1], t.spec.Shape[2]
	applyAug(out, augScratchOf(c, len(out)).tmp, h, w, ch, t.op, t.mag, t.g, t.tabs)
	return nil
}
