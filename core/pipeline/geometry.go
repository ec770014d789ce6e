package pipeline

import (
	"encoding/json"
	"fmt"
	"image"
	"math"

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
// A Mixer decoder (Mosaic) and a Blender (MixUp) show other samples: a
// sample's map is then a list of pieces (Piece), one per sample shown,
// which the later geometric operations move alike.
// Targets refuse, by name, any other operation in the pipeline they follow:
// a new op is followed or refused by construction, never silently ignored.

// Step is one operation's map of a sample, in continuous pixel
// coordinates (pixel i spans [i, i+1)): input point (x, y) lands at
// (SX·x + TX, SY·y + TY) of the W×H output; or, where Warp is not nil (a
// rotation, shear or perspective), at Warp.M·(x, y, 1), and SX..TY are
// unused.
type Step struct {
	SX, TX, SY, TY float64
	W, H           int
	Warp           *Warp
}

// WarpStep is the step of a map that is not axis-aligned: m onto a w×h
// output, scaling boxes' areas by area (see Warp).
func WarpStep(m Matrix, area float64, w, h int) Step {
	return Step{SX: 1, SY: 1, W: w, H: h, Warp: &Warp{M: m, Area: area}}
}

// Warp is a map that is not axis-aligned.
type Warp struct {
	M Matrix
	// Area is the factor the box filter's area ratio takes boxes' areas to
	// grow by: YOLO's scale², not counting rotation, shear or perspective.
	Area float64
	// Mirror: the map mirrors left to right (an odd number of flips).
	Mirror bool
	// stages are the map's stages, each a map from the previous stage
	// (the stored image for the first) and the part of its output that
	// shows the image: what one stage cut away does not come back in a
	// later one, and boxes are clipped stage by stage. Their product is M;
	// none: M is one stage onto the output's visible part.
	stages []stage
}

type stage struct {
	m Matrix
	v [4]float64
	// area is the factor the stage takes boxes' areas to grow by (Warp's
	// Area for a warp); warp: the stage is not axis-aligned.
	area float64
	warp bool
}

// frame is the whole of a w×h output.
func frame(w, h int) [4]float64 { return [4]float64{0, 0, float64(w), float64(h)} }

// Matrix is a projective map of the plane, row-major: (x, y) lands at
// ((M0·x + M1·y + M2)/z, (M3·x + M4·y + M5)/z), z = M6·x + M7·y + M8.
// An affine map has the last row 0 0 1.
type Matrix [9]float64

// AxisMatrix is the matrix of the axis-aligned map (SX·x + TX, SY·y + TY).
func AxisMatrix(sx, tx, sy, ty float64) Matrix { return Matrix{sx, 0, tx, 0, sy, ty, 0, 0, 1} }

// Apply maps (x, y); ok is false where the point lies on or behind the
// map's horizon (z <= 0), where it has no image.
func (m Matrix) Apply(x, y float64) (px, py float64, ok bool) {
	z := m[6]*x + m[7]*y + m[8]
	if !(z > 0) {
		return 0, 0, false
	}
	return (m[0]*x + m[1]*y + m[2]) / z, (m[3]*x + m[4]*y + m[5]) / z, true
}

// Mul is the map m after n.
func (m Matrix) Mul(n Matrix) Matrix {
	var r Matrix
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			r[3*i+j] = m[3*i]*n[j] + m[3*i+1]*n[3+j] + m[3*i+2]*n[6+j]
		}
	}
	return r
}

// Inverse is the inverse map; ok is false for a singular matrix.
func (m Matrix) Inverse() (inv Matrix, ok bool) {
	c := Matrix{
		m[4]*m[8] - m[5]*m[7], m[2]*m[7] - m[1]*m[8], m[1]*m[5] - m[2]*m[4],
		m[5]*m[6] - m[3]*m[8], m[0]*m[8] - m[2]*m[6], m[2]*m[3] - m[0]*m[5],
		m[3]*m[7] - m[4]*m[6], m[1]*m[6] - m[0]*m[7], m[0]*m[4] - m[1]*m[3],
	}
	d := m[0]*c[0] + m[1]*c[3] + m[2]*c[6]
	if d == 0 || math.IsNaN(d) || math.IsInf(d, 0) {
		return Matrix{}, false
	}
	for i := range c {
		c[i] /= d
	}
	return c, true
}

// Centred is the map of a warp whose output pixel centre p samples the
// input at ctr + inv·(p − ctr), ctr = (w/2, h/2) the centre of a w×h
// image: torchvision's affine warps (imgproc.InvAffine's matrix).
func Centred(inv [6]float64, w, h int) Matrix {
	cx, cy := float64(w)/2, float64(h)/2
	in := Matrix{inv[0], inv[1], inv[2], inv[3], inv[4], inv[5], 0, 0, 1}
	m, ok := in.Inverse()
	if !ok {
		return Matrix{0, 0, math.NaN(), 0, 0, math.NaN(), 0, 0, 1}
	}
	return AxisMatrix(1, cx, 1, cy).Mul(m).Mul(AxisMatrix(1, -cx, 1, -cy))
}

// Then is the map of step t after s (t's input is s's output, which
// shows only what lies in its frame): one operation that moves pixels
// twice.
func (s Step) Then(t Step) Step {
	a := Affine{SX: s.SX, TX: s.TX, SY: s.SY, TY: s.TY, W: s.W, H: s.H, Valid: frame(s.W, s.H), Warp: s.Warp}
	return Step{SX: 1, SY: 1, W: t.W, H: t.H, Warp: a.thenWarp(t).Warp}
}

// warp is the step's map as a Warp.
func (s Step) warp() Warp {
	if s.Warp != nil {
		return *s.Warp
	}
	return Warp{M: AxisMatrix(s.SX, s.TX, s.SY, s.TY), Area: math.Abs(s.SX * s.SY), Mirror: s.SX < 0}
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
	// decoder, the stored image): the draw Run makes under key. An
	// axis-aligned map leaves Step.Warp nil.
	Place(c *Ctx, key, w, h int) (Step, error)
}

// CentreCropper is a Geometric operation that also decides which boxes
// survive by their centres (torchvision's RandomIoUCrop): a box stays only
// when its centre, where the box is in the op's input, lies strictly
// inside the window. ok is false when every box stays.
type CentreCropper interface {
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
// point (x, y) lands at (SX·x + TX, SY·y + TY) of the W×H output, or at
// Warp.M·(x, y, 1) where a step was not axis-aligned (Warp not nil). Valid
// is the part of the output that shows the image (padding lies outside
// it); under a Warp, the bounds of that part.
type Affine struct {
	SX, TX, SY, TY float64
	W, H           int
	Valid          [4]float64 // x0, y0, x1, y1
	Warp           *Warp
	// Centres are the windows of CentreCropper steps, each with the map up
	// to it.
	Centres []CentreWindow
}

// CentreWindow is a CentreCropper step's window and the map of the
// pipeline before it.
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
	if a.Warp != nil || s.Warp != nil {
		return a.thenWarp(s)
	}
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

// thenWarp is Then where a map is not axis-aligned: the matrices
// compose, the stages line up, and Valid becomes the bounds of what the
// last stage shows.
func (a Affine) thenWarp(s Step) Affine {
	aw := Step{SX: a.SX, TX: a.TX, SY: a.SY, TY: a.TY, Warp: a.Warp}.warp()
	sw := s.warp()
	as, ss := a.stages(), s.stages()
	w := Warp{M: sw.M.Mul(aw.M), Area: aw.Area * sw.Area, Mirror: aw.Mirror != sw.Mirror,
		stages: append(append(make([]stage, 0, len(as)+len(ss)), as...), ss...)}
	nv := frame(s.W, s.H)
	if b, ok := chain(ss, a.Valid); ok {
		nv = b
	}
	w.stages[len(w.stages)-1].v = nv
	return Affine{SX: 1, SY: 1, W: s.W, H: s.H, Valid: nv, Warp: &w, Centres: a.Centres}
}

// stages are the affine's stages (see Warp).
func (a Affine) stages() []stage {
	if a.Warp == nil {
		return []stage{{AxisMatrix(a.SX, a.TX, a.SY, a.TY), a.Valid, math.Abs(a.SX * a.SY), false}}
	}
	if len(a.Warp.stages) == 0 {
		return []stage{{a.Warp.M, a.Valid, a.Warp.Area, true}}
	}
	return a.Warp.stages
}

// stages are the step's stages, the last onto its whole frame.
func (s Step) stages() []stage {
	if s.Warp != nil && len(s.Warp.stages) > 0 {
		return s.Warp.stages
	}
	w := s.warp()
	return []stage{{w.M, frame(s.W, s.H), w.Area, s.Warp != nil}}
}

// refArea is YOLO's box_candidates reference for the box b: its area as
// it enters the last warp, clipped by the stages before (as a mosaic's
// boxes are clipped to its canvas before RandomPerspective), times the
// area factors of that warp and the stages after it.
func refArea(stages []stage, b [4]float64) float64 {
	k := 0
	for i, st := range stages {
		if st.warp {
			k = i
		}
	}
	r, ok := chain(stages[:k], b)
	if !ok {
		return 0
	}
	area := (r[2] - r[0]) * (r[3] - r[1])
	for _, st := range stages[k:] {
		area *= st.area
	}
	return max(area, 0)
}

// chain maps the box b through the stages, clipped to each one's visible
// part; ok is false where a corner falls behind a stage's horizon.
func chain(stages []stage, b [4]float64) ([4]float64, bool) {
	for _, st := range stages {
		r, ok := st.m.bounds(b)
		if !ok {
			return b, false
		}
		v := st.v
		b = [4]float64{max(r[0], v[0]), max(r[1], v[1]), min(r[2], v[2]), min(r[3], v[3])}
	}
	return b, true
}

// bounds is the min/max of the box b's four mapped corners; ok is false
// where a corner has no image (behind the horizon).
func (m Matrix) bounds(b [4]float64) (r [4]float64, ok bool) {
	r = [4]float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	for _, c := range [4][2]float64{{b[0], b[1]}, {b[2], b[1]}, {b[0], b[3]}, {b[2], b[3]}} {
		x, y, ok := m.Apply(c[0], c[1])
		if !ok {
			return r, false
		}
		r = [4]float64{min(r[0], x), min(r[1], y), max(r[2], x), max(r[3], y)}
	}
	return r, true
}

// Shows reports whether the stored-image point (x, y) lands on the
// visible output: in what each stage of the pipeline showed.
func (a Affine) Shows(x, y float64) bool {
	_, _, inside := a.Point(x, y)
	return inside
}

// Mirrored reports whether the map mirrors the image left to right, where
// keypoints' left and right swap.
func (a Affine) Mirrored() bool {
	if a.Warp != nil {
		return a.Warp.Mirror
	}
	return a.SX < 0
}

// KeepsCentre reports whether the stored-image box b survives every
// CentreCropper step: its centre, as the box is (clipped) before the step,
// strictly inside the step's window.
func (a Affine) KeepsCentre(b [4]float64) bool {
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
// the mapped box's area before clipping. Under a Warp each stage maps the
// box to the bounds of its four mapped corners and clips it to what the
// stage shows (as YOLO clips a mosaic's boxes before its perspective), and
// area is refArea, YOLO's box_candidates' reference; a box with a corner
// behind the horizon is empty.
func (a Affine) Box(b [4]float64) (clipped [4]float64, area float64) {
	if a.Warp != nil {
		st := a.stages()
		r, ok := chain(st, b)
		if !ok {
			return [4]float64{}, 0
		}
		return r, refArea(st, b)
	}
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
	v := a.Valid
	if a.Warp != nil {
		inside := true
		for _, st := range a.stages() {
			var ok bool
			x, y, ok = st.m.Apply(x, y)
			inside = inside && ok && x >= st.v[0] && x < st.v[2] && y >= st.v[1] && y < st.v[3]
		}
		return x, y, inside
	}
	px, py = a.SX*x+a.TX, a.SY*y+a.TY
	return px, py, px >= v[0] && px < v[2] && py >= v[1] && py < v[3]
}

// withCentre is a with the centre window win of a CentreCropper added.
func (a Affine) withCentre(win [4]float64) Affine {
	before := a
	before.Centres = nil
	cs := a.Centres
	a.Centres = append(cs[:len(cs):len(cs)], CentreWindow{before, win})
	return a
}

// Piece is part of a sample's output that shows a stored image: the
// targets of sample Sample land where Map puts them. An ordinary pipeline
// has one piece, the sample's own; a Mixer (Mosaic) one per image it reads.
type Piece struct {
	Sample uint64
	Map    Affine
	// Rows, when not nil, are the only rows of the sample the piece shows
	// (a Paster's pasted instance); nil: every row.
	Rows []int
	// Filter, when not nil, is the map that decides which rows stay (a
	// box filter's); Map then clips them further. CutMix clips its
	// partner's rows to its area after they were kept, as Ultralytics
	// filters boxes in RandomPerspective, before CutMix.
	Filter *Affine
}

// Mixer is a decoder whose output shows the images of several samples (its
// own first, then partners it draws from the sample's key): Mosaic.
// Targets follow it piece by piece.
type Mixer interface {
	Op
	// Pieces appends to dst, for the sample in c, each sample whose
	// image the output shows and where its stored image lands: the draw
	// Run makes under key.
	Pieces(c *Ctx, key int, dst []Piece) ([]Piece, error)
}

// Geometry is the replay of an image output's pipeline for its targets:
// its geometric operations, as the image's program built them.
type Geometry struct {
	Image int // the followed image field
	// mixer, when the pipeline starts with one, gives the pieces the
	// steps then move; its name is mixName.
	mixer   Mixer
	mixKey  int
	mixName string
	steps   []geoStep
	Out     Spec // what the image pipeline produces per sample
}

// geoStep is a geometric operation, or a blend (op nil): the partner's
// pieces through the steps before it join the sample's.
type geoStep struct {
	op    Geometric
	key   int
	blend Blender
	paste Paster
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
		case Mixer:
			g.mixer, g.mixKey, g.mixName = o, p.keys[i], p.labels[i]
		case *blendStage:
			g.steps = append(g.steps, geoStep{key: p.keys[i], blend: o.b})
			if g.mixName == "" {
				g.mixName = p.labels[i]
			}
		case Paster:
			g.steps = append(g.steps, geoStep{paste: o, key: p.keys[i]})
			if g.mixName == "" {
				g.mixName = p.labels[i]
			}
		case Geometric:
			g.steps = append(g.steps, geoStep{op: o, key: p.keys[i]})
		case Photometric:
		default:
			return nil, fmt.Errorf("targets cannot follow the image operation %s: it moves pixels in a way "+
				"boxes, points and masks do not follow", p.labels[i])
		}
	}
	return g, nil
}

// Mixes names the operation that shows several samples in one output
// ("" when there is none): targets that cannot gather rows from other
// samples refuse it by this name.
func (g *Geometry) Mixes() string { return g.mixName }

// Sample returns the map of sample c.Sample's image pipeline, which must
// show that sample alone (see Pieces).
func (g *Geometry) Sample(c *Ctx, r interface {
	Column(uint64, int) ([]byte, error)
}) (Affine, error) {
	if g.mixer != nil {
		return Affine{}, fmt.Errorf("the image pipeline's %s shows several samples: its targets follow it piece by piece", g.mixName)
	}
	var buf [1]Piece
	pieces, err := g.Pieces(c, r, buf[:0])
	if err != nil {
		return Affine{}, err
	}
	return pieces[0].Map, nil
}

// Pieces appends to dst the pieces of sample c.Sample's output: where each
// sample it shows lands (one piece, the sample's own, without a Mixer or a
// Blender). The steps after the decoder move every piece alike.
func (g *Geometry) Pieces(c *Ctx, r interface {
	Column(uint64, int) ([]byte, error)
}, dst []Piece) ([]Piece, error) {
	return g.piecesUpTo(c, r, dst, len(g.steps), false)
}

// piecesUpTo is Pieces through the first n steps; a blend's partner
// (partner true) skips the blends among them, as its run does.
func (g *Geometry) piecesUpTo(c *Ctx, r interface {
	Column(uint64, int) ([]byte, error)
}, dst []Piece, n int, partner bool) ([]Piece, error) {
	pieces := dst
	if g.mixer != nil {
		var err error
		if pieces, err = g.mixer.Pieces(c, g.mixKey, dst); err != nil {
			return nil, err
		}
	} else {
		col, err := r.Column(c.Sample, g.Image)
		if err != nil {
			return nil, err
		}
		m := field.ParseRGBMeta(col)
		if m.Width < 1 || m.Height < 1 {
			return nil, fmt.Errorf("%w: the followed image is empty (%dx%d)", field.ErrData, m.Width, m.Height)
		}
		pieces = append(pieces, Piece{Sample: c.Sample, Map: Identity(m.Width, m.Height)})
	}
	for k, s := range g.steps[:n] {
		own := pieces[len(dst):]
		if s.blend != nil {
			if partner {
				continue
			}
			partner, ok := s.blend.Partner(c, s.key)
			if !ok {
				continue
			}
			start := len(pieces)
			err := withPartner(c, nil, -1, partner, s.key, func() error {
				var err error
				pieces, err = g.piecesUpTo(c, r, pieces, k, true)
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("partner sample %d: %w", partner, err)
			}
			if cut, ok := s.blend.(Cutter); ok {
				shown := append([]Piece(nil), pieces[start:]...)
				if pieces, err = cut.Cut(c, s.key, pieces[len(dst):start], shown, pieces[:start]); err != nil {
					return nil, err
				}
			}
			continue
		}
		if s.paste != nil {
			var err error
			if pieces, err = s.paste.Paste(c, s.key, own, pieces); err != nil {
				return nil, err
			}
			continue
		}
		st, err := s.op.Place(c, s.key, own[0].Map.W, own[0].Map.H)
		if err != nil {
			return nil, err
		}
		if cc, ok := s.op.(CentreCropper); ok {
			win, has, err := cc.Window(c, s.key, own[0].Map.W, own[0].Map.H)
			if err != nil {
				return nil, err
			}
			for i := range own {
				if has {
					own[i].Map = own[i].Map.withCentre(win)
					if f := own[i].Filter; f != nil {
						nf := f.withCentre(win)
						own[i].Filter = &nf
					}
				}
			}
		}
		for i := range own {
			own[i].Map = own[i].Map.Then(st)
			if f := own[i].Filter; f != nil { // later steps move both maps
				nf := f.Then(st)
				own[i].Filter = &nf
			}
		}
	}
	return pieces, nil
}
