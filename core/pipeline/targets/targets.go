// Package targets registers the decoders of detection and segmentation
// targets: ragged (RaggedArrayField: boxes, labels, keypoints, zero-padded
// to a number of rows) and mask (MaskField). Either may follow an image
// output's geometry (pipeline.Geometry): boxes and points are mapped where
// the image's pixels went and masks sampled there, and rows whose box is
// dropped go with it.
package targets

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

func init() {
	pipeline.RegisterDecoder("ragged", newRaggedDecoder)
	pipeline.RegisterDecoder("mask", newMaskDecoder)
}

// BoxFilter drops boxes whose visible part is too small after the geometry:
// narrower or shorter than MinSize, smaller than MinArea (output pixels²),
// or showing less than MinVisibility of the mapped box. WHThr, AreaThr and
// ARThr are YOLO's candidate filter (Ultralytics' box_candidates, strict
// comparisons): the visible part wider and taller than WHThr pixels, its
// area more than AreaThr of the box's area scaled by the map (for a
// RandomPerspective, by its scale²), its aspect ratio max(w/h, h/w) under
// ARThr (0: no limit).
type BoxFilter struct {
	MinSize       float64 `json:"min_size"`
	MinArea       float64 `json:"min_area"`
	MinVisibility float64 `json:"min_visibility"`
	WHThr         float64 `json:"wh_thr"`
	AreaThr       float64 `json:"area_thr"`
	ARThr         float64 `json:"ar_thr"`
}

// check checks the filter's thresholds: sizes and areas not negative, a
// visibility in [0, 1].
func (f BoxFilter) check() error {
	if !(f.MinSize >= 0) || !(f.MinArea >= 0) {
		return fmt.Errorf("min_size %v and min_area %v must not be negative", f.MinSize, f.MinArea)
	}
	if !(f.MinVisibility >= 0 && f.MinVisibility <= 1) {
		return fmt.Errorf("min_visibility %v must be in [0, 1]", f.MinVisibility)
	}
	if !(f.WHThr >= 0) || !(f.AreaThr >= 0) || !(f.ARThr >= 0) {
		return fmt.Errorf("wh_thr %v, area_thr %v and ar_thr %v must not be negative", f.WHThr, f.AreaThr, f.ARThr)
	}
	return nil
}

func (f BoxFilter) keep(b [4]float64, area float64) bool {
	w, h := b[2]-b[0], b[3]-b[1]
	if !(w > 0 && h > 0) || w < f.MinSize || h < f.MinSize || w*h < f.MinArea {
		return false
	}
	if !(w > f.WHThr && h > f.WHThr) || (f.AreaThr > 0 && !(w*h > f.AreaThr*area)) ||
		(f.ARThr > 0 && !(max(w/h, h/w) < f.ARThr)) {
		return false
	}
	return area > 0 && w*h >= f.MinVisibility*area
}

// rowFilter decides which rows of a sample stay: the rows of a boxes field
// (xyxy) whose box is still visible enough after the image's geometry.
// Rows of other fields (labels, keypoints, instance ids) that go with the
// boxes stay or go with them.
type rowFilter struct {
	boxes int // the boxes field
	// polygons, when not -1, is the polygon field of the boxes' objects:
	// under a map that is not axis-aligned a box is its mapped polygon's
	// (YOLO's segment2box) rather than its mapped corners' bounds.
	polygons int
	filter   BoxFilter
}

// keep decides which of sample's rows stay (c.Sample's own, or a partner
// a Mixer shows) and maps their boxes (clipped). own is the heap of the
// decoder's field for that sample: the boxes themselves when the field is
// the boxes field, the polygons when it is the polygon field.
func (f *rowFilter) keep(c *pipeline.Ctx, env pipeline.Env, sample uint64, a pipeline.Affine, own []byte, rows int) ([]bool, [][4]float64, error) {
	boxes, err := f.heap(c, env, sample, f.boxes, own)
	if err != nil {
		return nil, nil, fmt.Errorf("followed boxes: %w", err)
	}
	bd := env.Reader.Fields[f.boxes]
	item, _ := bd.ItemSize()
	if len(boxes) != rows*4*item {
		return nil, nil, fmt.Errorf("%w: %d rows here, the boxes field %q has %d bytes for them",
			field.ErrData, rows, bd.Name, len(boxes))
	}
	var polys []byte
	var prow, pitem int
	if f.polygons >= 0 && a.Warp != nil {
		if polys, err = f.heap(c, env, sample, f.polygons, own); err != nil {
			return nil, nil, fmt.Errorf("followed polygons: %w", err)
		}
		pd := env.Reader.Fields[f.polygons]
		pitem, _ = pd.ItemSize()
		r, _ := pd.RowBytes()
		if prow = int(r); len(polys) != rows*prow {
			return nil, nil, fmt.Errorf("%w: %d rows here, the polygon field %q has %d bytes for them",
				field.ErrData, rows, pd.Name, len(polys))
		}
	}
	keep := make([]bool, rows)
	out := make([][4]float64, rows)
	var row []byte
	var pts []float64
	for i := range keep {
		var b [4]float64
		for k := range b {
			b[k] = floatAt(boxes, item, 4*i+k)
		}
		cb, area := a.Box(b)
		if polys != nil {
			row = append(row[:0], polys[i*prow:(i+1)*prow]...)
			cb, pts = mapPolygon(a, row, pitem, pts)
		}
		keep[i], out[i] = f.filter.keep(cb, area) && a.KeepsCentre(b), cb
	}
	return keep, out, nil
}

// heap is field fi's bytes of sample: own when fi is the decoder's field.
func (f *rowFilter) heap(c *pipeline.Ctx, env pipeline.Env, sample uint64, fi int, own []byte) ([]byte, error) {
	if fi == env.Field {
		return own, nil
	}
	return readField(c, env, sample, fi)
}

// readField returns field f's heap bytes of sample: through the loader
// (c.Read) for the sample being decoded, through the file's map for a
// partner a Mixer shows.
func readField(c *pipeline.Ctx, env pipeline.Env, sample uint64, f int) ([]byte, error) {
	if sample == c.Sample {
		if c.Read == nil {
			return nil, fmt.Errorf("rows that follow another field need the loader's reader")
		}
		_, heap, err := c.Read(f)
		return heap, err
	}
	_, heap, err := env.Reader.Read(sample, f)
	if err != nil {
		return nil, fmt.Errorf("partner sample %d: %w", sample, err)
	}
	return heap, nil
}

// shownRow is a row a piece shows, and its box in the output.
type shownRow struct {
	piece, row int
	box        [4]float64
}

// shown lists the rows of the pieces that f keeps, with their boxes: the
// instances an operation over what the image shows (CopyPaste, CutMix)
// sees.
func (f rowFilter) shown(c *pipeline.Ctx, env pipeline.Env, pieces []pipeline.Piece) ([]shownRow, error) {
	var out []shownRow
	item, _ := env.Reader.Fields[f.boxes].ItemSize()
	for k, pc := range pieces {
		heap, err := readField(c, env, pc.Sample, f.boxes)
		if err != nil {
			return nil, fmt.Errorf("boxes: %w", err)
		}
		keep, boxes, err := f.keep(c, env, pc.Sample, pc.Map, nil, len(heap)/(4*item))
		if err != nil {
			return nil, err
		}
		rows := pc.Rows
		if rows == nil {
			rows = make([]int, len(keep))
			for i := range rows {
				rows[i] = i
			}
		}
		for _, i := range rows {
			if i >= 0 && i < len(keep) && keep[i] {
				out = append(out, shownRow{k, i, boxes[i]})
			}
		}
	}
	return out, nil
}

// newRowFilter checks that field f is a boxes field for the rows of env's
// field (nil when f is nil: every row stays) and polygons, if not nil, a
// polygon field.
func newRowFilter(env pipeline.Env, f, polygons *int, filter BoxFilter) (*rowFilter, error) {
	if f == nil {
		return nil, nil
	}
	if !isBoxes(env, *f) {
		return nil, fmt.Errorf("rows follow field %d, which is not a RaggedArrayField of xyxy boxes", *f)
	}
	r := &rowFilter{boxes: *f, polygons: -1, filter: filter}
	if polygons != nil {
		if !isPolygons(env, *polygons) {
			return nil, fmt.Errorf("polygons: field %d is not a RaggedArrayField of polygons", *polygons)
		}
		r.polygons = *polygons
	}
	return r, nil
}

func isPolygons(env pipeline.Env, f int) bool {
	if f < 0 || f >= len(env.Reader.Fields) {
		return false
	}
	d := env.Reader.Fields[f]
	return d.Type == field.Ragged && d.Target != nil && d.Target.Coords == "polygon"
}

func isBoxes(env pipeline.Env, f int) bool {
	if f < 0 || f >= len(env.Reader.Fields) {
		return false
	}
	d := env.Reader.Fields[f]
	return d.Type == field.Ragged && d.Target != nil && d.Target.Coords == "xyxy"
}

// floatAt reads element i of a little-endian float32 or float64 array.
func floatAt(b []byte, item, i int) float64 {
	if item == 4 {
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
}

func putFloat(b []byte, item, i int, x float64) {
	if item == 4 {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
	} else {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
}
