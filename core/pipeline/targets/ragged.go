package targets

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// raggedDecoder writes, per sample, the number of rows kept (int64) then
// those rows, zero-padded to maxRows: RaggedHeader + maxRows·row bytes,
// rounded up to 8 so every sample's count stays aligned.
type raggedDecoder struct {
	desc    field.Desc
	row     int
	maxRows int
	geo     *pipeline.Geometry
	env     pipeline.Env
	rows    *rowFilter // nil: every row is kept
	// flip[k] is the point that takes place k of a row when the geometry
	// mirrors the image left to right (keypoints' left and right swap).
	flip []int
}

// RaggedHeader is the size of the row count in front of a ragged sample.
const RaggedHeader = 8

// RaggedBytes is the per-sample output size of maxRows rows of row bytes.
func RaggedBytes(maxRows, row int) int { return (RaggedHeader + maxRows*row + 7) / 8 * 8 }

func newRaggedDecoder(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		MaxRows     int                    `json:"max_rows"`
		Geometry    *pipeline.GeometrySpec `json:"geometry"`
		Boxes       *int                   `json:"boxes"`
		FlipIndices []int                  `json:"flip_indices"`
		Polygons    *int                   `json:"polygons"`
		BoxFilter
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.MaxRows < 0 {
		return nil, fmt.Errorf("max_rows %d must not be negative", a.MaxRows)
	}
	if err := a.BoxFilter.check(); err != nil {
		return nil, err
	}
	if err := pipeline.NeedType(env, field.Ragged); err != nil {
		return nil, err
	}
	row, err := env.Desc.RowBytes()
	if err != nil {
		return nil, err
	}
	if uint64(a.MaxRows)*row > env.Reader.PageSize() {
		return nil, fmt.Errorf("max_rows %d out of range", a.MaxRows)
	}
	if env.Desc.DType[0] == '>' {
		return nil, fmt.Errorf("big-endian dtype %q cannot be handed to torch", env.Desc.DType)
	}
	d := &raggedDecoder{desc: env.Desc, row: int(row), maxRows: a.MaxRows, env: env}
	coords := ""
	if env.Desc.Target != nil {
		coords = env.Desc.Target.Coords
	}
	if a.Geometry == nil {
		if a.Boxes != nil || a.FlipIndices != nil || a.Polygons != nil {
			return nil, fmt.Errorf("boxes, polygons and flip_indices need the image pipeline the rows follow")
		}
		return d, nil
	}
	if d.geo, err = pipeline.NewGeometry(env, *a.Geometry); err != nil {
		return nil, err
	}
	if coords == "xyxy" && a.Boxes == nil {
		a.Boxes = &env.Field // boxes decide their own rows
	}
	if a.Polygons != nil && a.Boxes == nil {
		return nil, fmt.Errorf("polygons give boxes to rows that go with a boxes field: field %q names none", env.Desc.Name)
	}
	if d.rows, err = newRowFilter(env, a.Boxes, a.Polygons, a.BoxFilter); err != nil {
		return nil, err
	}
	if a.FlipIndices != nil {
		if coords != "xy" {
			return nil, fmt.Errorf("flip_indices reorder points: field %q has no xy coordinates", env.Desc.Name)
		}
		if len(env.Desc.Shape) < 2 {
			return nil, fmt.Errorf("flip_indices reorder the points of a row: field %q has one point per row", env.Desc.Name)
		}
		if err := checkPermutation(a.FlipIndices, int(env.Desc.Shape[0])); err != nil {
			return nil, fmt.Errorf("flip_indices: %w", err)
		}
		d.flip = a.FlipIndices
	}
	return d, nil
}

// checkPermutation checks that p reorders n things.
func checkPermutation(p []int, n int) error {
	if len(p) != n {
		return fmt.Errorf("%d indices for %d points", len(p), n)
	}
	seen := make([]bool, n)
	for _, k := range p {
		if k < 0 || k >= n || seen[k] {
			return fmt.Errorf("%v is not a permutation of 0..%d", p, n-1)
		}
		seen[k] = true
	}
	return nil
}

func (d *raggedDecoder) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{RaggedBytes(d.maxRows, d.row)}, DType: "|u1"}, nil
}

// raggedBuf is a worker's list of pieces.
type raggedBuf struct{ pieces []pipeline.Piece }

// Run writes the rows of every piece the image output shows (the sample's
// own, then a Mixer's partners), each through its piece's map, up to
// maxRows.
func (d *raggedDecoder) Run(c *pipeline.Ctx, _ int, _, out []byte) error {
	_, rows := field.RaggedRef(c.Col)
	if uint64(len(c.Heap)) != rows*uint64(d.row) {
		return fmt.Errorf("%w: %d rows in %d bytes", field.ErrData, rows, len(c.Heap))
	}
	clear(out)
	if d.geo == nil {
		n := min(int(rows), d.maxRows)
		copy(out[RaggedHeader:], c.Heap[:n*d.row])
		binary.LittleEndian.PutUint64(out, uint64(n))
		return nil
	}
	buf := c.State("ragged_pieces", func() any { return &raggedBuf{} }).(*raggedBuf)
	pieces, err := d.geo.Pieces(c, d.env.Reader, buf.pieces[:0])
	if err != nil {
		return err
	}
	buf.pieces = pieces
	item, _ := d.desc.ItemSize()
	n := 0
	for _, pc := range pieces {
		heap, rows := c.Heap, int(rows)
		if pc.Sample != c.Sample {
			col, h, err := d.env.Reader.Read(pc.Sample, d.env.Field)
			if err != nil {
				return fmt.Errorf("partner sample %d: %w", pc.Sample, err)
			}
			_, r := field.RaggedRef(col)
			heap, rows = h, int(r)
		}
		var keep []bool
		var boxes [][4]float64
		if d.rows != nil {
			if keep, boxes, err = d.rows.keep(c, d.env, pc.Sample, pc.Map, heap, rows); err != nil {
				return err
			}
			if pc.Filter != nil { // kept as the filter's map places them, clipped by Map
				if keep, _, err = d.rows.keep(c, d.env, pc.Sample, *pc.Filter, heap, rows); err != nil {
					return err
				}
			}
		}
		count := rows
		if pc.Rows != nil {
			count = len(pc.Rows) // a pasted instance: its row only
		}
		for q := 0; q < count && n < d.maxRows; q++ {
			i := q
			if pc.Rows != nil {
				if i = pc.Rows[q]; i < 0 || i >= rows {
					return fmt.Errorf("%w: pasted row %d of sample %d, which has %d", field.ErrData, i, pc.Sample, rows)
				}
			}
			if keep != nil && !keep[i] {
				continue
			}
			dst := out[RaggedHeader+n*d.row : RaggedHeader+(n+1)*d.row]
			copy(dst, heap[i*d.row:(i+1)*d.row])
			if boxes != nil && d.desc.Target.Coords == "xyxy" {
				// The filter's boxes: the corners' or the polygon's (rows' polygons).
				for k, x := range boxes[i] {
					putFloat(dst, item, k, x)
				}
			} else {
				d.mapRow(pc.Map, dst, item)
			}
			n++
		}
	}
	binary.LittleEndian.PutUint64(out, uint64(n))
	return nil
}

// mapRow moves a kept row's coordinates into the output: boxes mapped and
// clipped; points mapped, with a third value (visibility) zeroed outside
// the visible part, and reordered by flip when the image is mirrored.
func (d *raggedDecoder) mapRow(a pipeline.Affine, row []byte, item int) {
	switch d.desc.Target.Coords {
	case "xyxy":
		var b [4]float64
		for k := range b {
			b[k] = floatAt(row, item, k)
		}
		cb, _ := a.Box(b)
		for k, x := range cb {
			putFloat(row, item, k, x)
		}
	case "xy":
		last := int(d.desc.Shape[len(d.desc.Shape)-1])
		for p := 0; p+last <= len(row)/item; p += last {
			x, y, inside := a.Point(floatAt(row, item, p), floatAt(row, item, p+1))
			putFloat(row, item, p, x)
			putFloat(row, item, p+1, y)
			if last >= 3 && !inside {
				putFloat(row, item, p+2, 0)
			}
		}
		if d.flip != nil && a.Mirrored() {
			d.reorder(row, last*item)
		}
	case "polygon":
		mapPolygon(a, row, item, nil)
	}
}

// mapPolygon maps and clips a polygon row in place (Affine.Polygon) and
// returns its box; pts is scratch space.
func mapPolygon(a pipeline.Affine, row []byte, item int, pts []float64) ([4]float64, []float64) {
	n := len(row) / item
	if cap(pts) < n {
		pts = make([]float64, n)
	}
	pts = pts[:n]
	for k := range pts {
		pts[k] = floatAt(row, item, k)
	}
	box := a.Polygon(pts)
	for k, x := range pts {
		putFloat(row, item, k, x)
	}
	return box, pts
}

// reorder puts point flip[k] of the row at place k (points of size bytes).
func (d *raggedDecoder) reorder(row []byte, size int) {
	var buf [512]byte
	old := buf[:0]
	if len(row) > len(buf) {
		old = make([]byte, 0, len(row))
	}
	old = append(old, row...)
	for k, from := range d.flip {
		copy(row[k*size:(k+1)*size], old[from*size:(from+1)*size])
	}
}
