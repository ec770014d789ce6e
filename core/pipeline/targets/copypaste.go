package targets

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

func init() {
	pipeline.Register("copy_paste", newCopyPaste)
}

// copyPaste is Ultralytics' CopyPaste(p, mode="flip"): the instances its
// input shows (every row of every piece: a mosaic's tiles included) are
// flipped left to right across the image; those whose flipped box covers
// less than 0.30 of every shown box's area (bbox_ioa) are candidates, and
// the round(p·n) that overlap least (half to even, Python's round) are
// pasted: the flipped input's pixels inside their flipped polygons. It
// draws nothing at random. Targets get one piece per pasted instance (a
// pipeline.Paster): its sample's row through the flipped map, after the
// rows already shown.
type copyPaste struct {
	p        float64
	env      pipeline.Env
	geo      *pipeline.Geometry // the image pipeline before the op
	boxes    int
	polygons int
}

// copyPasteIoA is Ultralytics' threshold: a flipped instance may cover
// less than this share of any instance's box.
const copyPasteIoA = 0.30

func newCopyPaste(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		P        float64                `json:"p"`
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
	if a.Boxes == nil || a.Polygons == nil || a.Geometry == nil {
		return nil, fmt.Errorf("copy_paste needs the instances' boxes and polygons fields and the operations before it")
	}
	if err := pipeline.NeedFile(env); err != nil {
		return nil, err
	}
	if !isBoxes(env, *a.Boxes) || !isPolygons(env, *a.Polygons) {
		return nil, fmt.Errorf("copy_paste pastes instances: field %d must be xyxy boxes and field %d polygons "+
			"(RaggedArrayFields with coords 'xyxy' and 'polygon')", *a.Boxes, *a.Polygons)
	}
	g, err := pipeline.NewGeometry(env, *a.Geometry)
	if err != nil {
		return nil, fmt.Errorf("copy_paste: %w", err)
	}
	return &copyPaste{p: a.P, env: env, geo: g, boxes: *a.Boxes, polygons: *a.Polygons}, nil
}

func (o *copyPaste) Out(in pipeline.Spec) (pipeline.Spec, error) {
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	if g := o.geo.Out.Shape; g[0] != in.Shape[0] || g[1] != in.Shape[1] {
		return in, fmt.Errorf("copy_paste: the operations before it give %v, its input is %v", g, in.Shape)
	}
	return in, nil
}

// pasted is an instance chosen: row of piece.
type pasted struct{ piece, row int }

// choose is the op's choice for the sample in c, whose input shows own (a
// w-wide image).
func (o *copyPaste) choose(c *pipeline.Ctx, own []pipeline.Piece) ([]pasted, error) {
	// Ultralytics drops empty boxes first: the rows targets keep.
	all, err := rowFilter{boxes: o.boxes, polygons: o.polygons}.shown(c, o.env, own)
	if err != nil {
		return nil, fmt.Errorf("copy_paste: %w", err)
	}
	if len(all) == 0 || o.p == 0 {
		return nil, nil
	}
	w := float64(own[0].Map.W)
	var cands []pasted
	var worst []float64
	for _, j := range all {
		b := j.box
		fb := [4]float64{w - b[2], b[1], w - b[0], b[3]}
		m := 0.0
		for _, e := range all {
			a := (e.box[2] - e.box[0]) * (e.box[3] - e.box[1])
			iw := max(min(fb[2], e.box[2])-max(fb[0], e.box[0]), 0)
			ih := max(min(fb[3], e.box[3])-max(fb[1], e.box[1]), 0)
			m = max(m, iw*ih/a)
		}
		if m < copyPasteIoA {
			cands = append(cands, pasted{j.piece, j.row})
			worst = append(worst, m)
		}
	}
	idx := make([]int, len(cands))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return worst[idx[a]] < worst[idx[b]] })
	n := int(math.RoundToEven(o.p * float64(len(cands))))
	out := make([]pasted, n)
	for i := range out {
		out[i] = cands[idx[i]]
	}
	return out, nil
}

// Paste appends a piece per pasted instance: its row through the map
// mirrored across the image.
func (o *copyPaste) Paste(c *pipeline.Ctx, _ int, own, dst []pipeline.Piece) ([]pipeline.Piece, error) {
	chosen, err := o.choose(c, own)
	if err != nil {
		return nil, err
	}
	w, h := own[0].Map.W, own[0].Map.H
	flip := pipeline.Same(w, h).FlipX()
	for _, p := range chosen {
		pc := own[p.piece]
		dst = append(dst, pipeline.Piece{Sample: pc.Sample, Map: pc.Map.Then(flip), Rows: []int{p.row}})
	}
	return dst, nil
}

// copyPasteBuf is a worker's scratch.
type copyPasteBuf struct {
	pieces []pipeline.Piece
	row    []byte
	pts    []float64
	xs     []float64
	spans  []span
}

func (o *copyPaste) Run(c *pipeline.Ctx, _ int, in, out []byte) error {
	copy(out, in)
	buf := c.State("copy_paste", func() any { return &copyPasteBuf{} }).(*copyPasteBuf)
	pieces, err := o.geo.Pieces(c, o.env.Reader, buf.pieces[:0])
	if err != nil {
		return err
	}
	buf.pieces = pieces
	chosen, err := o.choose(c, pieces)
	if err != nil || len(chosen) == 0 {
		return err
	}
	w, h := pieces[0].Map.W, pieces[0].Map.H
	ch := len(in) / (w * h)
	pd := o.env.Reader.Fields[o.polygons]
	item, _ := pd.ItemSize()
	rb, _ := pd.RowBytes()
	for _, p := range chosen {
		pc := pieces[p.piece]
		heap, err := readField(c, o.env, pc.Sample, o.polygons)
		if err != nil {
			return fmt.Errorf("copy_paste: polygons: %w", err)
		}
		if (p.row+1)*int(rb) > len(heap) {
			return fmt.Errorf("%w: copy_paste: polygon row %d of sample %d is missing", field.ErrData, p.row, pc.Sample)
		}
		buf.row = append(buf.row[:0], heap[p.row*int(rb):(p.row+1)*int(rb)]...)
		_, buf.pts = mapPolygon(pc.Map, buf.row, item, buf.pts)
		for k := 0; k < len(buf.pts); k += 2 {
			buf.pts[k] = float64(w) - buf.pts[k]
		}
		buf.spans, buf.xs = rasterize(buf.spans[:0], buf.xs, buf.pts, w, h)
		for _, s := range buf.spans {
			row := s.y * w
			for x := s.x0; x < s.x1; x++ {
				copy(out[(row+x)*ch:(row+x+1)*ch], in[(row+w-1-x)*ch:(row+w-x)*ch])
			}
		}
	}
	return nil
}
