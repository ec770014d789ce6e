package pipeline

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// Geometry replays, for one sample, the geometric part of an image field's
// pipeline: the crop its decoder drew and the flips, shifts and crops its
// transforms drew, from the same randomness keys, so targets (boxes,
// masks) land where the image's pixels went without any state passing
// between programs. Photometric operations leave targets alone; an
// operation whose geometry is unknown here is refused when the program is
// built rather than silently ignored.

// Affine is the axis-aligned map of a sample's image pipeline, in
// continuous pixel coordinates (pixel i spans [i, i+1)): a stored-image
// point (x, y) lands at (SX·x + TX, SY·y + TY) of the W×H output. Valid is
// the part of the output that shows the image (padding lies outside it).
type Affine struct {
	SX, TX, SY, TY float64
	W, H           int
	Valid          [4]float64 // x0, y0, x1, y1
}

func identity(w, h int) Affine {
	return Affine{SX: 1, SY: 1, W: w, H: h, Valid: [4]float64{0, 0, float64(w), float64(h)}}
}

// then composes a step x' = sx·x + tx (and for y) producing a w×h image.
func (a Affine) then(sx, tx, sy, ty float64, w, h int) Affine {
	v := a.Valid
	x0, x1 := sx*v[0]+tx, sx*v[2]+tx
	y0, y1 := sy*v[1]+ty, sy*v[3]+ty
	return Affine{
		SX: sx * a.SX, TX: sx*a.TX + tx, SY: sy * a.SY, TY: sy*a.TY + ty, W: w, H: h,
		Valid: [4]float64{
			max(min(x0, x1), 0), max(min(y0, y1), 0),
			min(max(x0, x1), float64(w)), min(max(y0, y1), float64(h)),
		},
	}
}

// cropTo maps the rectangle [l, l+cw) × [t, t+ch) onto a w×h output.
func (a Affine) cropTo(l, t, cw, ch, w, h int) Affine {
	sx, sy := float64(w)/float64(cw), float64(h)/float64(ch)
	return a.then(sx, -float64(l)*sx, sy, -float64(t)*sy, w, h)
}

// Box maps a stored-image box and clips it to the visible output; area is
// the mapped box's area before clipping.
func (a Affine) Box(b [4]float64) (clipped [4]float64, area float64) {
	x0, x1 := a.SX*b[0]+a.TX, a.SX*b[2]+a.TX
	y0, y1 := a.SY*b[1]+a.TY, a.SY*b[3]+a.TY
	x0, x1 = min(x0, x1), max(x0, x1)
	y0, y1 = min(y0, y1), max(y0, y1)
	v := a.Valid
	return [4]float64{max(x0, v[0]), max(y0, v[1]), min(x1, v[2]), min(y1, v[3])}, (x1 - x0) * (y1 - y0)
}

// geoStep is one operation of the followed pipeline, built from its spec.
type geoStep struct {
	op  Op
	key int
}

// Geometry is a compiled replay of an image field's operations.
type Geometry struct {
	Image int // the followed image field
	steps []geoStep
	Out   Spec // what the image pipeline produces per sample
}

// GeometrySpec is how a target names what it follows: the image field and
// the operations of its pipeline (as given to Build, keys included).
type GeometrySpec struct {
	Image int               `json:"image"`
	Ops   []json.RawMessage `json:"ops"`
}

// photometric operations change pixel values only.
var photometric = map[string]bool{"cutout": true, "brightness": true, "contrast": true, "saturation": true,
	"grayscale": true, "solarize": true, "normalize": true, "poison": true}

// NewGeometry builds the replay of spec's operations on field spec.Image of env's reader.
func NewGeometry(env Env, spec GeometrySpec) (*Geometry, error) {
	r := env.Reader
	if spec.Image < 0 || spec.Image >= len(r.Fields) || r.Fields[spec.Image].Type != field.RGBImage {
		return nil, fmt.Errorf("follows field %d, which is not an RGBImageField", spec.Image)
	}
	ienv := Env{Reader: r, Field: spec.Image, Desc: r.Fields[spec.Image]}
	g := &Geometry{Image: spec.Image}
	var in Spec
	for i, raw := range spec.Ops {
		var head struct {
			Op  string `json:"op"`
			Key *int   `json:"key"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("followed operation %d: %w", i, err)
		}
		mk, ok := registry[head.Op]
		if !ok {
			return nil, fmt.Errorf("targets cannot follow the image operation %q (geometry unknown)", head.Op)
		}
		op, err := mk(ienv, raw)
		if err != nil {
			return nil, fmt.Errorf("followed %s: %w", head.Op, err)
		}
		if in, err = op.Out(in); err != nil {
			return nil, fmt.Errorf("followed %s: %w", head.Op, err)
		}
		switch op.(type) {
		case *simpleRGB, *cropRGB, *rrcTransform, *resizePad, *flip, *translate, *randomCrop:
		default:
			if !photometric[head.Op] {
				return nil, fmt.Errorf("targets cannot follow the image operation %q (geometry unknown)", head.Op)
			}
			continue
		}
		if (i == 0) != decoders[head.Op] {
			return nil, fmt.Errorf("followed pipeline must start with an image decoder, not %q", head.Op)
		}
		key := i
		if head.Key != nil {
			key = *head.Key
		}
		g.steps = append(g.steps, geoStep{op, key})
	}
	if len(g.steps) == 0 {
		return nil, fmt.Errorf("followed pipeline has no image decoder")
	}
	if len(in.Shape) != 3 {
		return nil, fmt.Errorf("followed pipeline gives %v, not (H, W, C) images", in.Shape)
	}
	g.Out = in
	return g, nil
}

// Sample returns the map of sample c.Sample's image pipeline: the draws
// its operations make for (seed, epoch, position, key).
func (g *Geometry) Sample(c *Ctx, r interface {
	Column(uint64, int) ([]byte, error)
}) (Affine, error) {
	col, err := r.Column(c.Sample, g.Image)
	if err != nil {
		return Affine{}, err
	}
	m := field.ParseRGBMeta(col)
	if m.Width < 1 || m.Height < 1 {
		return Affine{}, fmt.Errorf("%w: the followed image is empty (%dx%d)", field.ErrData, m.Width, m.Height)
	}
	a := identity(m.Width, m.Height)
	for _, s := range g.steps {
		switch o := s.op.(type) {
		case *simpleRGB:
		case *cropRGB:
			rc := o.rect(c.Rand(s.key), a.W, a.H)
			a = a.cropTo(rc.Min.X, rc.Min.Y, rc.Dx(), rc.Dy(), o.ow, o.oh)
		case *rrcTransform:
			rc := o.rect(c.Rand(s.key), a.W, a.H)
			a = a.cropTo(rc.Min.X, rc.Min.Y, rc.Dx(), rc.Dy(), o.ow, o.oh)
		case *resizePad:
			nw, nh := o.fit(c.Rand(s.key), a.W, a.H)
			a = a.then(float64(nw)/float64(a.W), 0, float64(nh)/float64(a.H), 0, o.ow, o.oh)
		case *flip:
			if !o.draw(c, s.key) {
				continue
			}
			if o.horizontal {
				a = a.then(-1, float64(a.W), 1, 0, a.W, a.H)
			} else {
				a = a.then(1, 0, -1, float64(a.H), a.W, a.H)
			}
		case *translate:
			dy, dx := o.draw(c, s.key)
			a = a.then(1, -float64(dx), 1, -float64(dy), a.W, a.H)
		case *randomCrop:
			top, left := o.draw(c, s.key, a.W, a.H)
			a = a.then(1, -float64(left), 1, -float64(top), o.w, o.h)
		}
	}
	return a, nil
}

// sourceIndex maps output pixel i (its centre) back to a stored-image pixel
// along one axis (scale s, offset t, n stored pixels), nearest-neighbour.
func sourceIndex(i int, s, t float64, n int) int {
	x := math.Floor((float64(i) + 0.5 - t) / s)
	return int(min(max(x, 0), float64(n-1)))
}
