package targets

import (
	"encoding/json"
	"fmt"
	"image"
	"math"
	"math/rand/v2"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

func init() {
	pipeline.Register("cut_mix", newCutMix)
}

// cutMix is Ultralytics' CutMix(p, beta, num_areas): with probability p a
// partner drawn uniformly from the file is run through the operations
// before it (with its own draws, as MixUp's), and num_areas rectangles are
// drawn: lam ~ Beta(beta, beta), sides ⌊W·√(1-lam)⌋ × ⌊H·√(1-lam)⌋ around a
// uniform integer centre, clipped to the image. Those that overlap none of
// the boxes the sample shows (those box_candidates keeps, as Ultralytics'
// RandomPerspective before it) are candidates; one is picked at random. The
// partner's shown boxes covered by it for at least 0.1 of their area (0.01
// for segments: with a polygons field) join the sample's, clipped to the rectangle, whose pixels
// become the partner's. Without a candidate, or without such a box,
// nothing changes. Targets follow it as a pipeline.Cutter.
type cutMix struct {
	p        float64
	beta     float64
	areas    int
	ioa      float64   // the partner's boxes' share inside the area to join
	filter   BoxFilter // the boxes it sees
	n        uint64    // samples to draw partners from
	env      pipeline.Env
	geo      *pipeline.Geometry // the image pipeline before the op
	boxes    int
	polygons int // the boxes' polygons field, -1 without segments
	w, h, c  int // the op's image
}

func newCutMix(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		P        float64                `json:"p"`
		Beta     float64                `json:"beta"`
		NumAreas int                    `json:"num_areas"`
		Boxes    *int                   `json:"boxes"`
		Polygons *int                   `json:"polygons"`
		Geometry *pipeline.GeometrySpec `json:"geometry"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if err := pipeline.Prob("p", a.P); err != nil {
		return nil, err
	}
	if !(a.Beta > 0) || math.IsInf(a.Beta, 0) {
		return nil, fmt.Errorf("beta must be a finite number > 0, got %v", a.Beta)
	}
	if a.NumAreas < 1 || a.NumAreas > 1000 {
		return nil, fmt.Errorf("num_areas must be in [1, 1000], got %d", a.NumAreas)
	}
	if a.Boxes == nil || a.Geometry == nil {
		return nil, fmt.Errorf("cut_mix needs the boxes field and the operations before it")
	}
	if err := pipeline.NeedFile(env); err != nil {
		return nil, err
	}
	if env.Reader.NumSamples() == 0 {
		return nil, fmt.Errorf("the file has no samples to draw partners from")
	}
	if !isBoxes(env, *a.Boxes) {
		return nil, fmt.Errorf("cut_mix: field %d must be xyxy boxes (a RaggedArrayField with coords 'xyxy')", *a.Boxes)
	}
	// The boxes it sees are those Ultralytics' RandomPerspective, before
	// it, keeps: box_candidates, area_thr 0.01 for segments, whose boxes
	// are their warped polygons' bounds.
	ioa, filter, polygons := 0.1, BoxFilter{WHThr: 2, ARThr: 100, AreaThr: 0.1}, -1
	if a.Polygons != nil {
		if !isPolygons(env, *a.Polygons) {
			return nil, fmt.Errorf("cut_mix: field %d must be polygons (a RaggedArrayField with coords 'polygon')", *a.Polygons)
		}
		ioa, filter.AreaThr, polygons = 0.01, 0.01, *a.Polygons
	}
	g, err := pipeline.NewGeometry(env, *a.Geometry)
	if err != nil {
		return nil, fmt.Errorf("cut_mix: %w", err)
	}
	s := g.Out.Shape
	return &cutMix{p: a.P, beta: a.Beta, areas: a.NumAreas, ioa: ioa, filter: filter, n: env.Reader.NumSamples(),
		env: env, geo: g, boxes: *a.Boxes, polygons: polygons, h: s[0], w: s[1], c: s[2]}, nil
}

func (o *cutMix) Out(in pipeline.Spec) (pipeline.Spec, error) {
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	if in.Shape[0] != o.h || in.Shape[1] != o.w {
		return in, fmt.Errorf("cut_mix: the operations before it give %dx%d, its input is %v", o.h, o.w, in.Shape)
	}
	return in, nil
}

// draw is the op's draw for the sample in c: whether it applies, the
// partner and the candidate areas; r then picks among them.
func (o *cutMix) draw(c *pipeline.Ctx, key int) (r *rand.Rand, partner uint64, areas [][4]int, ok bool) {
	r = c.Rand(key)
	if r.Float64() >= o.p {
		return r, 0, nil, false
	}
	partner = r.Uint64N(o.n)
	areas = make([][4]int, o.areas)
	for i := range areas {
		k := math.Sqrt(1 - pipeline.Beta(r, o.beta))
		cw, ch := int(float64(o.w)*k), int(float64(o.h)*k)
		cx, cy := r.IntN(o.w), r.IntN(o.h)
		areas[i] = [4]int{clamp(cx-cw/2, o.w), clamp(cy-ch/2, o.h), clamp(cx+cw/2, o.w), clamp(cy+ch/2, o.h)}
	}
	return r, partner, areas, true
}

func clamp(v, hi int) int { return min(max(v, 0), hi) }

// rows is the filter of the rows CutMix sees: those Ultralytics' box
// candidates keep.
func (o *cutMix) rows() rowFilter {
	return rowFilter{boxes: o.boxes, polygons: o.polygons, filter: o.filter}
}

func (o *cutMix) Partner(c *pipeline.Ctx, key int) (uint64, bool) {
	_, partner, _, ok := o.draw(c, key)
	return partner, ok
}

// inter is the area of the intersection of a and b.
func inter(a [4]int, b [4]float64) float64 {
	w := min(float64(a[2]), b[2]) - max(float64(a[0]), b[0])
	h := min(float64(a[3]), b[3]) - max(float64(a[1]), b[1])
	return max(w, 0) * max(h, 0)
}

// choose is the op's choice for the sample in c, whose input shows own
// and whose partner (drawn by draw) shows partner: the area and the
// partner's rows that join; ok false when nothing changes.
func (o *cutMix) choose(c *pipeline.Ctx, key int, own, partner []pipeline.Piece) (area [4]int, rows []shownRow, ok bool, err error) {
	r, _, areas, applies := o.draw(c, key)
	if !applies {
		return area, nil, false, nil
	}
	mine, err := o.rows().shown(c, o.env, own)
	if err != nil {
		return area, nil, false, fmt.Errorf("cut_mix: %w", err)
	}
	var cands []int
	for i, a := range areas {
		free := true
		for _, s := range mine {
			free = free && inter(a, s.box) <= 0
		}
		if free {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return area, nil, false, nil
	}
	area = areas[cands[r.IntN(len(cands))]]
	theirs, err := o.rows().shown(c, o.env, partner)
	if err != nil {
		return area, nil, false, fmt.Errorf("cut_mix: partner: %w", err)
	}
	for _, s := range theirs {
		b := s.box
		if a := (b[2] - b[0]) * (b[3] - b[1]); a > 0 && inter(area, b)/a >= o.ioa {
			rows = append(rows, s)
		}
	}
	return area, rows, len(rows) > 0, nil
}

// Cut appends the partner's rows that join, as pieces restricted to them,
// clipped to the area.
func (o *cutMix) Cut(c *pipeline.Ctx, key int, own, partner, dst []pipeline.Piece) ([]pipeline.Piece, error) {
	area, rows, ok, err := o.choose(c, key, own, partner)
	if err != nil || !ok {
		return dst, err
	}
	aw, ah := area[2]-area[0], area[3]-area[1]
	crop := pipeline.CropStep(image.Rect(area[0], area[1], area[2], area[3]), aw, ah)
	back := pipeline.Step{SX: 1, TX: float64(area[0]), SY: 1, TY: float64(area[1]), W: o.w, H: o.h}
	for k := range partner {
		var sel []int
		for _, s := range rows {
			if s.piece == k {
				sel = append(sel, s.row)
			}
		}
		if sel != nil {
			m := partner[k].Map
			dst = append(dst, pipeline.Piece{Sample: partner[k].Sample, Map: m.Then(crop).Then(back), Rows: sel, Filter: &m})
		}
	}
	return dst, nil
}

// cutMixBuf is a worker's scratch.
type cutMixBuf struct{ own, partner []pipeline.Piece }

// decide is choose for the sample in c, its pieces and its partner's
// replayed.
func (o *cutMix) decide(c *pipeline.Ctx, key int) (partner uint64, area [4]int, ok bool, err error) {
	_, partner, _, applies := o.draw(c, key)
	if !applies {
		return 0, area, false, nil
	}
	buf := c.State("cut_mix", func() any { return &cutMixBuf{} }).(*cutMixBuf)
	if buf.own, err = o.geo.Pieces(c, o.env.Reader, buf.own[:0]); err != nil {
		return 0, area, false, err
	}
	if buf.partner, err = o.geo.PartnerPieces(c, o.env.Reader, partner, key, buf.partner[:0]); err != nil {
		return 0, area, false, fmt.Errorf("partner sample %d: %w", partner, err)
	}
	area, _, ok, err = o.choose(c, key, buf.own, buf.partner)
	return partner, area, ok, err
}

func (o *cutMix) Blend(c *pipeline.Ctx, key int, own, other, out []byte) error {
	copy(out, own)
	_, a, ok, err := o.decide(c, key)
	if err != nil || !ok {
		return err
	}
	for y := a[1]; y < a[3]; y++ {
		i, j := (y*o.w+a[0])*o.c, (y*o.w+a[2])*o.c
		copy(out[i:j], other[i:j])
	}
	return nil
}

// Run is the op without its partner (Build runs it as a blend stage).
func (o *cutMix) Run(*pipeline.Ctx, int, []byte, []byte) error {
	return fmt.Errorf("CutMix runs only in a program, after the operations its partner goes through")
}

func (o *cutMix) Reports() int { return 6 }

// Report writes (applied, partner, x1, y1, x2, y2): the area whose pixels
// are the partner's; all 0 where nothing changed. The partner is exact
// below 2^24 samples (float32).
func (o *cutMix) Report(c *pipeline.Ctx, key int, dst []float32) {
	clear(dst[:6])
	partner, a, ok, err := o.decide(c, key)
	if err != nil || !ok {
		return
	}
	dst[0], dst[1] = 1, float32(partner)
	for i, v := range a {
		dst[2+i] = float32(v)
	}
}
