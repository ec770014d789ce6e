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
	register("ragged", newRaggedDecoder)
	register("mask", newMaskDecoder)
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

// raggedDecoder writes, per sample, the number of rows kept (int64) then
// those rows, zero-padded to maxRows: RaggedHeader + maxRows·row bytes,
// rounded up to 8 so every sample's count stays aligned.
type raggedDecoder struct {
	desc    field.Desc
	row     int
	maxRows int
	geo     *Geometry
	env     Env
	// boxes is the Ragged xyxy field whose kept rows decide this field's
	// (itself for boxes; the boxes field for labels); -1: every row is kept.
	boxes  int
	filter BoxFilter
}

// RaggedHeader is the size of the row count in front of a ragged sample.
const RaggedHeader = 8

// RaggedBytes is the per-sample output size of maxRows rows of row bytes.
func RaggedBytes(maxRows, row int) int { return (RaggedHeader + maxRows*row + 7) / 8 * 8 }

func newRaggedDecoder(env Env, raw json.RawMessage) (Op, error) {
	var a struct {
		MaxRows  int           `json:"max_rows"`
		Geometry *GeometrySpec `json:"geometry"`
		Boxes    *int          `json:"boxes"`
		BoxFilter
	}
	if err := parse(raw, &a); err != nil {
		return nil, err
	}
	if err := needType(env, field.Ragged); err != nil {
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
	d := &raggedDecoder{desc: env.Desc, row: int(row), maxRows: a.MaxRows, env: env, boxes: -1, filter: a.BoxFilter}
	if a.Geometry != nil {
		if d.geo, err = NewGeometry(env, *a.Geometry); err != nil {
			return nil, err
		}
		d.boxes = env.Field
		if a.Boxes != nil {
			d.boxes = *a.Boxes
		}
		if !isBoxes(env, d.boxes) && !(d.boxes == env.Field && env.Desc.Target.Coords == "xy") {
			return nil, fmt.Errorf("rows follow field %d, which is not a RaggedArrayField of xyxy boxes", d.boxes)
		}
		if d.boxes != env.Field && env.Desc.Target.Coords != "" {
			return nil, fmt.Errorf("a field of coordinates follows an image, not another field's boxes")
		}
		if d.boxes == env.Field && env.Desc.Target.Coords == "xy" {
			d.boxes = -1
		}
	}
	return d, nil
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
		if d.boxes >= 0 {
			boxes := c.Heap
			if d.boxes != d.env.Field {
				if c.Read == nil {
					return fmt.Errorf("rows that follow another field need the loader's reader")
				}
				_, heap, err := c.Read(d.boxes)
				if err != nil {
					return fmt.Errorf("followed boxes: %w", err)
				}
				boxes = heap
			}
			if keep, err = d.keep(a, boxes, int(rows)); err != nil {
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

// keep decides which of the boxes (rows xyxy of the boxes field) stay.
func (d *raggedDecoder) keep(a Affine, boxes []byte, rows int) ([]bool, error) {
	bd := d.env.Reader.Fields[d.boxes]
	item, _ := bd.ItemSize()
	if len(boxes) != rows*4*item {
		return nil, fmt.Errorf("%w: %d rows here, the followed boxes field %q has %d bytes for them",
			field.ErrData, rows, bd.Name, len(boxes))
	}
	keep := make([]bool, rows)
	for i := range keep {
		var b [4]float64
		for k := range b {
			b[k] = floatAt(boxes, item, 4*i+k)
		}
		cb, area := a.Box(b)
		keep[i] = d.filter.keep(cb, area)
	}
	return keep, nil
}

// mapRow moves a kept row's coordinates into the output: boxes mapped and
// clipped; points mapped, with a third value (visibility) zeroed outside
// the visible part.
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
			x := a.SX*floatAt(row, item, p) + a.TX
			y := a.SY*floatAt(row, item, p+1) + a.TY
			putFloat(row, item, p, x)
			putFloat(row, item, p+1, y)
			v := a.Valid
			if last >= 3 && !(x >= v[0] && x < v[2] && y >= v[1] && y < v[3]) {
				putFloat(row, item, p+2, 0)
			}
		}
	}
}

// maskDecoder writes a MaskField's map at its image pipeline's output size:
// the same crops, flips and shifts, nearest-neighbour; fill where the
// output shows no image (padding).
type maskDecoder struct {
	geo  *Geometry
	env  Env
	item int
	fill uint16
	out  Spec
}

func newMaskDecoder(env Env, raw json.RawMessage) (Op, error) {
	var a struct {
		Geometry *GeometrySpec `json:"geometry"`
		Fill     int           `json:"fill"`
	}
	if err := parse(raw, &a); err != nil {
		return nil, err
	}
	if err := needType(env, field.Mask); err != nil {
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
	// The field allows only "|u1" and "<u2" (field.Desc.checkTarget).
	return &maskDecoder{geo: g, env: env, item: item, fill: uint16(a.Fill),
		out: Spec{Shape: []int{g.Out.Shape[0], g.Out.Shape[1]}, DType: env.Desc.DType}}, nil
}

func (d *maskDecoder) Out(Spec) (Spec, error) { return d.out, nil }

// maskBuf is a worker's buffer for decompressed masks.
type maskBuf struct{ b []byte }

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
	buf.b = grow(buf.b, m.Width*m.Height*d.item)
	if err := field.DecodeMask(m, c.Heap, buf.b); err != nil {
		return err
	}
	d.sample(a, buf.b, m.Width, m.Height, out)
	return nil
}

// sample fills out (the W×H output) from src (the stored sw×sh mask).
func (d *maskDecoder) sample(a Affine, src []byte, sw, sh int, out []byte) {
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
			if sx < 0 {
				copy(row[x*it:(x+1)*it], fill[:it])
			} else if it == 1 {
				row[x] = srow[sx]
			} else {
				row[2*x], row[2*x+1] = srow[sx], srow[sx+1]
			}
		}
	}
}
