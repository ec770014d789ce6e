package pipeline

import (
	"encoding/json"
	"fmt"
	"image"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// One geometry per op. An operation that moves pixels implements Geometric:
// its Place is the map of a sample, computed from the same draw its Run
// makes. No draw is stored or shared: Run, Place (and a Reporter's Report)
// each make it again from c.Rand(key), a pure function of (seed, epoch,
// position, key), and so get the same numbers. Targets (boxes, points,
// masks) replay the image pipeline through Place -- every target program
// draws each op of the image once more per sample -- so they land where
// the pixels went without any state passing between programs.
// core/pipeline/ops's TestPlaceFollowsRun holds every registered Geometric
// op to this. An operation that only changes pixel values implements
// Photometric, and targets pass it by.
// Targets refuse, by name, any other operation in the pipeline they follow:
// a new op is followed or refused by construction, never silently ignored.

// Step is one operation's map of a sample, axis-aligned, in continuous
// pixel coordinates (pixel i spans [i, i+1)): input point (x, y) lands at
// (SX·x + TX, SY·y + TY) of the W×H output.
type Step struct {
	SX, TX, SY, TY float64
	W, H           int
}

// Same is the map of an operation that moves nothing in a w×h image.
func Same(w, h int) Step { return Step{SX: 1, SY: 1, W: w, H: h} }

// CropStep maps the input rectangle r onto a w×h output.
func CropStep(r image.Rectangle, w, h int) Step {
	sx, sy := float64(w)/float64(r.Dx()), float64(h)/float64(r.Dy())
	return Step{SX: sx, TX: -float64(r.Min.X) * sx, SY: sy, TY: -float64(r.Min.Y) * sy, W: w, H: h}
}

// FlipX mirrors the step's output left to right.
func (s Step) FlipX() Step {
	s.SX, s.TX = -s.SX, float64(s.W)-s.TX
	return s
}

// FlipY mirrors the step's output top to bottom.
func (s Step) FlipY() Step {
	s.SY, s.TY = -s.SY, float64(s.H)-s.TY
	return s
}

// Geometric is an operation that moves pixels.
type Geometric interface {
	Op
	// Place is the op's map of the sample in c, whose input is w×h (for a
	// decoder, the stored image): the draw Run makes under key.
	Place(c *Ctx, key, w, h int) (Step, error)
}

// Centred is a Geometric operation that also decides which boxes survive
// by their centres (torchvision's RandomIoUCrop): a box stays only when
// its centre, where the box is in the op's input, lies strictly inside
// the window. ok is false when every box stays.
type Centred interface {
	Geometric
	Window(c *Ctx, key, w, h int) (win [4]float64, ok bool, err error)
}

// Photometric marks an operation that changes pixel values only: the
// targets that follow its image pass it by.
type Photometric interface {
	Op
	Photometric()
}

// PhotometricOp is embedded by the operations that change pixel values
// only, to mark them Photometric.
type PhotometricOp struct{}

func (PhotometricOp) Photometric() {}

// Affine is the map of a sample's whole image pipeline: a stored-image
// point (x, y) lands at (SX·x + TX, SY·y + TY) of the W×H output. Valid is
// the part of the output that shows the image (padding lies outside it).
type Affine struct {
	SX, TX, SY, TY float64
	W, H           int
	Valid          [4]float64 // x0, y0, x1, y1
	// Centres are the windows of Centred steps, each with the map up to it.
	Centres []CentreWindow
}

// CentreWindow is a Centred step's window and the map of the pipeline
// before it.
type CentreWindow struct {
	Before Affine
	Win    [4]float64
}

// Identity is the map of a w×h image that no operation has moved.
func Identity(w, h int) Affine {
	return Affine{SX: 1, SY: 1, W: w, H: h, Valid: [4]float64{0, 0, float64(w), float64(h)}}
}

// Then composes the step s after a.
func (a Affine) Then(s Step) Affine {
	v := a.Valid
	x0, x1 := s.SX*v[0]+s.TX, s.SX*v[2]+s.TX
	y0, y1 := s.SY*v[1]+s.TY, s.SY*v[3]+s.TY
	return Affine{
		SX: s.SX * a.SX, TX: s.SX*a.TX + s.TX, SY: s.SY * a.SY, TY: s.SY*a.TY + s.TY, W: s.W, H: s.H,
		Valid: [4]float64{
			max(min(x0, x1), 0), max(min(y0, y1), 0),
			min(max(x0, x1), float64(s.W)), min(max(y0, y1), float64(s.H)),
		},
		Centres: a.Centres,
	}
}

// Centred reports whether the stored-image box b survives every Centred
// step: its centre, as the box is (clipped) before the step, strictly
// inside the step's window.
func (a Affine) Centred(b [4]float64) bool {
	for _, c := range a.Centres {
		cb, _ := c.Before.Box(b)
		cx, cy := 0.5*(cb[0]+cb[2]), 0.5*(cb[1]+cb[3])
		if !(c.Win[0] < cx && cx < c.Win[2] && c.Win[1] < cy && cy < c.Win[3]) {
			return false
		}
	}
	return true
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

// Point maps a stored-image point; inside reports whether it lands on the
// visible output.
func (a Affine) Point(x, y float64) (px, py float64, inside bool) {
	px, py = a.SX*x+a.TX, a.SY*y+a.TY
	v := a.Valid
	return px, py, px >= v[0] && px < v[2] && py >= v[1] && py < v[3]
}

// Geometry is the replay of an image output's pipeline for its targets:
// its geometric operations, as the image's program built them.
type Geometry struct {
	Image int // the followed image field
	steps []geoStep
	Out   Spec // what the image pipeline produces per sample
}

type geoStep struct {
	op  Geometric
	key int
}

// GeometrySpec is how a target names what it follows: the image field and
// the operations of its pipeline (as given to Build, keys and seeds included).
type GeometrySpec struct {
	Image int               `json:"image"`
	Ops   []json.RawMessage `json:"ops"`
}

// NewGeometry builds the replay of spec's operations on field spec.Image of
// env's reader. They are built as Build builds them (the same keys, the
// same fused operations), so every step draws what the image's did.
func NewGeometry(env Env, spec GeometrySpec) (*Geometry, error) {
	r := env.Reader
	if spec.Image < 0 || spec.Image >= len(r.Fields) || r.Fields[spec.Image].Type != field.RGBImage {
		return nil, fmt.Errorf("follows field %d, which is not an RGBImageField", spec.Image)
	}
	p, err := Build(r, spec.Image, spec.Ops)
	if err != nil {
		return nil, fmt.Errorf("followed pipeline: %w", err)
	}
	if len(p.batch) > 0 {
		return nil, fmt.Errorf("targets cannot follow the image operation %s: it mixes images of the batch", p.bnames[0])
	}
	if len(p.SampleOut.Shape) != 3 {
		return nil, fmt.Errorf("followed pipeline gives %v, not (H, W, C) images", p.SampleOut.Shape)
	}
	g := &Geometry{Image: spec.Image, Out: p.SampleOut}
	for i, op := range p.ops {
		switch o := op.(type) {
		case Geometric:
			g.steps = append(g.steps, geoStep{o, p.keys[i]})
		case Photometric:
		default:
			return nil, fmt.Errorf("targets cannot follow the image operation %s: it moves pixels in a way "+
				"boxes, points and masks do not follow", p.labels[i])
		}
	}
	return g, nil
}

// Sample returns the map of sample c.Sample's image pipeline.
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
	a := Identity(m.Width, m.Height)
	for _, s := range g.steps {
		st, err := s.op.Place(c, s.key, a.W, a.H)
		if err != nil {
			return Affine{}, err
		}
		if cw, ok := s.op.(Centred); ok {
			win, has, err := cw.Window(c, s.key, a.W, a.H)
			if err != nil {
				return Affine{}, err
			}
			if has {
				before := a
				before.Centres = nil
				a.Centres = append(a.Centres[:len(a.Centres):len(a.Centres)], CentreWindow{before, win})
			}
		}
		a = a.Then(st)
	}
	return a, nil
}
