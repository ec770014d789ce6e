package pipeline

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// Target decoders: ragged arrays (boxes, labels, keypoints) and masks,
// optionally following an image field's geometry (see Geometry).

func init() {
	RegisterDecoder("ragged", newRaggedDecoder)
	RegisterDecoder("mask", newMaskDecoder)
}

// BoxFilter drops boxes whose visible part is too small after the geometry:
// narrower or shorter than MinSize, smaller than MinArea (output pixels²),
// or showing less than MinVisibility of the mapped box.
type BoxFilter struct {
	MinSize       float64 `json:"min_size"`
	MinArea       float64 `json:"min_area"`
	MinVisibility float64 `json:"min_visibility"`
}

func (f BoxFilter) keep(b [4]float64, area float64) bool {
	w, h := b[2]-b[0], b[3]-b[1]
	if !(w > 0 && h > 0) || w < f.MinSize || h < f.MinSize || w*h < f.MinArea {
		return false
	}
	return area > 0 && w*h >= f.MinVisibility*area
}

// rowFilter decides which rows of a sample stay: the rows of a boxes field
// (xyxy) whose box is still visible enough after the image's geometry.
// Rows of other fields (labels, keypoints, instance ids) that go with the
// boxes stay or go with them.
type rowFilter struct {
	boxes  int // the boxes field
	filter BoxFilter
}

// keep decides which of the sample's rows stay. own is the heap of the
// decoder's field: the boxes themselves when the field is the boxes field.
func (f *rowFilter) keep(c *Ctx, env Env, a Affine, own []byte, rows int) ([]bool, error) {
	boxes := own
	if f.boxes != env.Field {
		if c.Read == nil {
			return nil, fmt.Errorf("rows that follow another field need the loader's reader")
		}
		_, heap, err := c.Read(f.boxes)
		if err != nil {
			return nil, fmt.Errorf("followed boxes: %w", err)
		}
		boxes = heap
	}
	bd := env.Reader.Fields[f.boxes]
	item, _ := bd.ItemSize()
	if len(boxes) != rows*4*item {
		return nil, fmt.Errorf("%w: %d rows here, the boxes field %q has %d bytes for them",
			field.ErrData, rows, bd.Name, len(boxes))
	}
	keep := make([]bool, rows)
	for i := range keep {
		var b [4]float64
		for k := range b {
			b[k] = floatAt(boxes, item, 4*i+k)
		}
		cb, area := a.Box(b)
		keep[i] = f.filter.keep(cb, area)
	}
	return keep, nil
}

// newRowFilter checks that field f is a boxes field for the rows of env's
// field (nil when f is nil: every row stays).
func newRowFilter(env Env, f *int, filter BoxFilter) (*rowFilter, error) {
	if f == nil {
		return nil, nil
	}
	if !isBoxes(env, *f) {
		return nil, fmt.Errorf("rows follow field %d, which is not a RaggedArrayField of xyxy boxes", *f)
	}
	return &rowFilter{boxes: *f, filter: filter}, nil
}

// raggedDecoder writes, per sample, the number of rows kept (int64) then
// those rows, zero-padded to maxRows: RaggedHeader + maxRows·row bytes,
// rounded up to 8 so every sample's count stays aligned.
type raggedDecoder struct {
	desc    field.Desc
	row     int
	maxRows int
	geo     *Geometry
	env     Env
	rows    *rowFilter // nil: every row is kept
	// flip[k] is the point that takes place k of a row when the geometry
	// mirrors the image left to right (keypoints' left and right swap).
	flip []int
}

// RaggedHeader is the size of the row count in front of a ragged sample.
const RaggedHeader = 8

// RaggedBytes is the per-sample output size of maxRows rows of row bytes.
func RaggedBytes(maxRows, row int) int { return (RaggedHeader + maxRows*row + 7) / 8 * 8 }

func newRaggedDecoder(env Env, raw json.RawMessage) (Op, error) {
	var a struct {
		MaxRows     int           `json:"max_rows"`
		Geometry    *GeometrySpec `json:"geometry"`
		Boxes       *int          `json:"boxes"`
		FlipIndices []int         `json:"flip_indices"`
		BoxFilter
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	if err := NeedType(env, field.Ragged); err != nil {
		return nil, err
	}
	row, err := env.Desc.RowBytes()
	if err != nil {
		return nil, err
	}
	if a.MaxRows < 0 || uint64(a.MaxRows)*row > env.Reader.PageSize() {
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
		if a.Boxes != nil || a.FlipIndices != nil {
			return nil, fmt.Errorf("boxes and flip_indices need the image pipeline the rows follow")
		}
		return d, nil
	}
	if d.geo, err = NewGeometry(env, *a.Geometry); err != nil {
		return nil, err
	}
	if coords == "xyxy" && a.Boxes == nil {
		a.Boxes = &env.Field // boxes decide their own rows
	}
	if d.rows, err = newRowFilter(env, a.Boxes, a.BoxFilter); err != nil {
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

func isBoxes(env Env, f int) bool {
	if f < 0 || f >= len(env.Reader.Fields) {
		return false
	}
	d := env.Reader.Fields[f]
	return d.Type == field.Ragged && d.Target != nil && d.Target.Coords == "xyxy"
}

func (d *raggedDecoder) Out(Spec) (Spec, error) {
	return Spec{Shape: []int{RaggedBytes(d.maxRows, d.row)}, DType: "|u1"}, nil
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

func (d *raggedDecoder) Run(c *Ctx, _ int, _, out []byte) error {
	_, rows := field.RaggedRef(c.Col)
	if uint64(len(c.Heap)) != rows*uint64(d.row) {
		return fmt.Errorf("%w: %d rows in %d bytes", field.ErrData, rows, len(c.Heap))
	}
	clear(out)
	var a Affine
	var keep []bool
	if d.geo != nil {
		var err error
		if a, err = d.geo.Sample(c, d.env.Reader); err != nil {
			return err
		}
		if d.rows != nil {
			if keep, err = d.rows.keep(c, d.env, a, c.Heap, int(rows)); err != nil {
				return err
			}
		}
	}
	item, _ := d.desc.ItemSize()
	n := 0
	for i := 0; i < int(rows) && n < d.maxRows; i++ {
		if keep != nil && !keep[i] {
			continue
		}
		dst := out[RaggedHeader+n*d.row : RaggedHeader+(n+1)*d.row]
		copy(dst, c.Heap[i*d.row:(i+1)*d.row])
		if d.geo != nil {
			d.mapRow(a, dst, item)
		}
		n++
	}
	binary.LittleEndian.PutUint64(out, uint64(n))
	return nil
}

// mapRow moves a kept row's coordinates into the output: boxes mapped and
// clipped; points mapped, with a third value (visibility) zeroed outside
// the visible part, and reordered by flip when the image is mirrored.
func (d *raggedDecoder) mapRow(a Affine, row []byte, item int) {
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
		if d.flip != nil && a.SX < 0 {
			d.reorder(row, last*item)
		}
	}
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

// maskDecoder writes a MaskField's map at its image pipeline's output size:
// the same crops, flips and shifts, nearest-neighbour; fill where the
// output shows no image (padding). An instance map (pixel value k+1 on
// row k of a boxes field) may be renumbered to the rows the boxes output
// keeps: value j+1 on its kept row j, 0 where the box was dropped.
type maskDecoder struct {
	geo       *Geometry
	env       Env
	item      int
	fill      uint16
	out       Spec
	instances *rowFilter
}

func newMaskDecoder(env Env, raw json.RawMessage) (Op, error) {
	var a struct {
		Geometry  *GeometrySpec `json:"geometry"`
		Fill      int           `json:"fill"`
		Instances *int          `json:"instances"`
		BoxFilter
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	if err := NeedType(env, field.Mask); err != nil {
		return nil, err
	}
	if a.Geometry == nil {
		return nil, fmt.Errorf("a mask decoder needs the image pipeline it follows")
	}
	item, _ := env.Desc.ItemSize()
	if a.Fill < 0 || a.Fill >= 1<<(8*item) {
		return nil, fmt.Errorf("fill %d does not fit %s", a.Fill, env.Desc.DType)
	}
	g, err := NewGeometry(env, *a.Geometry)
	if err != nil {
		return nil, err
	}
	rows, err := newRowFilter(env, a.Instances, a.BoxFilter)
	if err != nil {
		return nil, fmt.Errorf("instances: %w", err)
	}
	// The field allows only "|u1" and "<u2" (field.Desc.checkTarget).
	return &maskDecoder{geo: g, env: env, item: item, fill: uint16(a.Fill), instances: rows,
		out: Spec{Shape: []int{g.Out.Shape[0], g.Out.Shape[1]}, DType: env.Desc.DType}}, nil
}

func (d *maskDecoder) Out(Spec) (Spec, error) { return d.out, nil }

// maskBuf is a worker's buffer for decompressed masks, and the table that
// renumbers instances.
type maskBuf struct {
	b  []byte
	id []uint16
}

func (d *maskDecoder) Run(c *Ctx, _ int, _, out []byte) error {
	m := field.ParseMaskMeta(c.Col)
	a, err := d.geo.Sample(c, d.env.Reader)
	if err != nil {
		return err
	}
	icol, err := d.env.Reader.Column(c.Sample, d.geo.Image)
	if err != nil {
		return err
	}
	if im := field.ParseRGBMeta(icol); im.Width != m.Width || im.Height != m.Height {
		return fmt.Errorf("%w: mask is %dx%d, its image %dx%d", field.ErrData, m.Width, m.Height, im.Width, im.Height)
	}
	buf := c.State("mask", func() any { return &maskBuf{} }).(*maskBuf)
	buf.b = Grow(buf.b, m.Width*m.Height*d.item)
	if err := field.DecodeMask(m, c.Heap, buf.b); err != nil {
		return err
	}
	var ids []uint16
	if d.instances != nil {
		if ids, err = d.renumber(c, a, buf); err != nil {
			return err
		}
	}
	return d.sample(a, buf.b, m.Width, m.Height, out, ids)
}

// renumber is the table from stored instance ids to the kept rows' (0 for
// background and dropped boxes).
func (d *maskDecoder) renumber(c *Ctx, a Affine, buf *maskBuf) ([]uint16, error) {
	bcol, _, err := c.Read(d.instances.boxes)
	if err != nil {
		return nil, fmt.Errorf("instances' boxes: %w", err)
	}
	_, rows := field.RaggedRef(bcol)
	keep, err := d.instances.keep(c, d.env, a, nil, int(rows))
	if err != nil {
		return nil, err
	}
	buf.id = append(buf.id[:0], 0)
	n := uint16(0)
	for _, k := range keep {
		if k {
			n++
			buf.id = append(buf.id, n)
		} else {
			buf.id = append(buf.id, 0)
		}
	}
	return buf.id, nil
}

// sample fills out (the W×H output) from src (the stored sw×sh mask),
// through ids when not nil.
func (d *maskDecoder) sample(a Affine, src []byte, sw, sh int, out []byte, ids []uint16) error {
	w, h, it := a.W, a.H, d.item
	v := a.Valid
	xs := make([]int, w) // source column of each output column, -1 outside the image
	for x := range xs {
		xs[x] = -1
		if cx := float64(x) + 0.5; cx >= v[0] && cx < v[2] {
			xs[x] = sourceIndex(x, a.SX, a.TX, sw) * it
		}
	}
	var fill [2]byte
	binary.LittleEndian.PutUint16(fill[:], d.fill)
	for y := 0; y < h; y++ {
		row := out[y*w*it : (y+1)*w*it]
		cy := float64(y) + 0.5
		if cy < v[1] || cy >= v[3] {
			for x := 0; x < w; x++ {
				copy(row[x*it:(x+1)*it], fill[:it])
			}
			continue
		}
		sy := sourceIndex(y, a.SY, a.TY, sh)
		srow := src[sy*sw*it : (sy+1)*sw*it]
		for x, sx := range xs {
			switch {
			case sx < 0:
				copy(row[x*it:(x+1)*it], fill[:it])
			case ids != nil:
				id := int(srow[sx])
				if it == 2 {
					id = int(binary.LittleEndian.Uint16(srow[sx:]))
				}
				if id >= len(ids) {
					return fmt.Errorf("%w: instance id %d, but the sample has %d boxes", field.ErrData, id, len(ids)-1)
				}
				if it == 1 {
					row[x] = byte(ids[id])
				} else {
					binary.LittleEndian.PutUint16(row[2*x:], ids[id])
				}
			case it == 1:
				row[x] = srow[sx]
			default:
				row[2*x], row[2*x+1] = srow[sx], srow[sx+1]
			}
		}
	}
	return nil
}
