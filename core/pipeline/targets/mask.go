package targets

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// maskDecoder writes a MaskField's map at its image pipeline's output size:
// the same crops, flips and shifts, nearest-neighbour; fill where the
// output shows no image (padding). An instance map (pixel value k+1 on
// row k of a boxes field) may be renumbered to the rows the boxes output
// keeps: value j+1 on its kept row j, 0 where the box was dropped.
type maskDecoder struct {
	geo       *pipeline.Geometry
	env       pipeline.Env
	item      int
	fill      uint16
	out       pipeline.Spec
	instances *rowFilter
}

func newMaskDecoder(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		Geometry  *pipeline.GeometrySpec `json:"geometry"`
		Fill      int                    `json:"fill"`
		Instances *int                   `json:"instances"`
		Polygons  *int                   `json:"polygons"`
		BoxFilter
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.Fill < 0 || a.Fill > 0xffff {
		return nil, fmt.Errorf("fill %d must be in [0, 65535]", a.Fill)
	}
	if err := a.BoxFilter.check(); err != nil {
		return nil, err
	}
	if err := pipeline.NeedType(env, field.Mask); err != nil {
		return nil, err
	}
	if a.Geometry == nil {
		return nil, fmt.Errorf("a mask decoder needs the image pipeline it follows")
	}
	item, _ := env.Desc.ItemSize()
	if a.Fill < 0 || a.Fill >= 1<<(8*item) {
		return nil, fmt.Errorf("fill %d does not fit %s", a.Fill, field.DTypeName(env.Desc.DType))
	}
	g, err := pipeline.NewGeometry(env, *a.Geometry)
	if err != nil {
		return nil, err
	}
	if name := g.Mixes(); name != "" {
		return nil, fmt.Errorf("masks cannot follow %s, which shows several samples in one image: "+
			"decode its boxes, labels and keypoints with RaggedDecoder", name)
	}
	rows, err := newRowFilter(env, a.Instances, a.Polygons, a.BoxFilter)
	if err != nil {
		return nil, fmt.Errorf("instances: %w", err)
	}
	// The field allows only "|u1" and "<u2" (field.Desc.checkTarget).
	return &maskDecoder{geo: g, env: env, item: item, fill: uint16(a.Fill), instances: rows,
		out: pipeline.Spec{Shape: []int{g.Out.Shape[0], g.Out.Shape[1]}, DType: env.Desc.DType}}, nil
}

func (d *maskDecoder) Out(pipeline.Spec) (pipeline.Spec, error) { return d.out, nil }

// maskBuf is a worker's buffer for decompressed masks, and the table that
// renumbers instances.
type maskBuf struct {
	b  []byte
	id []uint16
}

func (d *maskDecoder) Run(c *pipeline.Ctx, _ int, _, out []byte) error {
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
	if err := d.decode(m, c.Heap, buf); err != nil {
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

// decode decompresses a stored mask into buf.b.
func (d *maskDecoder) decode(m field.MaskMeta, heap []byte, buf *maskBuf) error {
	n, err := m.Pixels(d.item, len(heap))
	if err != nil {
		return err
	}
	buf.b = pipeline.Grow(buf.b, n)
	return field.DecodeMask(m, heap, buf.b)
}

// renumber is the table from stored instance ids to the kept rows' (0 for
// background and dropped boxes).
func (d *maskDecoder) renumber(c *pipeline.Ctx, a pipeline.Affine, buf *maskBuf) ([]uint16, error) {
	bcol, _, err := c.Read(d.instances.boxes)
	if err != nil {
		return nil, fmt.Errorf("instances' boxes: %w", err)
	}
	_, rows := field.RaggedRef(bcol)
	keep, _, err := d.instances.keep(c, d.env, c.Sample, a, nil, int(rows))
	if err != nil {
		return nil, err
	}
	buf.id, err = instanceTable(buf.id, keep)
	return buf.id, err
}

// instanceTable is the table from stored instance ids (k+1 for row k) to
// the kept rows' (0 for background and dropped rows), in dst's memory. A
// uint16 map numbers at most 65535 instances: more rows are an error.
func instanceTable(dst []uint16, keep []bool) ([]uint16, error) {
	if len(keep) > math.MaxUint16 {
		return dst, fmt.Errorf("%w: %d rows of instances, more than a mask numbers (65535)", field.ErrData, len(keep))
	}
	dst = append(dst[:0], 0)
	n := uint16(0)
	for _, k := range keep {
		if k {
			n++
			dst = append(dst, n)
		} else {
			dst = append(dst, 0)
		}
	}
	return dst, nil
}

// sample fills out (the W×H output) from src (the stored sw×sh mask),
// through ids when not nil.
func (d *maskDecoder) sample(a pipeline.Affine, src []byte, sw, sh int, out []byte, ids []uint16) error {
	if a.Warp != nil {
		return d.sampleWarp(a, src, sw, sh, out, ids)
	}
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

// sourceIndex maps output pixel i (its centre) back to a stored-image pixel
// along one axis (scale s, offset t, n stored pixels), nearest-neighbour.
func sourceIndex(i int, s, t float64, n int) int {
	x := math.Floor((float64(i) + 0.5 - t) / s)
	return int(min(max(x, 0), float64(n-1)))
}

// sampleWarp is sample under a map that is not axis-aligned: each output
// pixel's centre, mapped back through the inverse, picks the stored pixel
// it lands in (nearest); fill where it lands outside the stored mask.
func (d *maskDecoder) sampleWarp(a pipeline.Affine, src []byte, sw, sh int, out []byte, ids []uint16) error {
	inv, ok := a.Warp.M.Inverse()
	it := d.item
	var fill [2]byte
	binary.LittleEndian.PutUint16(fill[:], d.fill)
	for y := 0; y < a.H; y++ {
		for x := 0; x < a.W; x++ {
			o := out[(y*a.W+x)*it : (y*a.W+x+1)*it]
			sx, sy, in := inv.Apply(float64(x)+0.5, float64(y)+0.5)
			fx, fy := math.Floor(sx), math.Floor(sy)
			if !ok || !in || !(fx >= 0 && fx < float64(sw) && fy >= 0 && fy < float64(sh)) || !a.Shows(sx, sy) {
				copy(o, fill[:it])
				continue
			}
			i := (int(fy)*sw + int(fx)) * it
			if ids == nil {
				copy(o, src[i:i+it])
				continue
			}
			id := int(src[i])
			if it == 2 {
				id = int(binary.LittleEndian.Uint16(src[i:]))
			}
			if id >= len(ids) {
				return fmt.Errorf("%w: instance id %d, but the sample has %d boxes", field.ErrData, id, len(ids)-1)
			}
			if it == 1 {
				o[0] = byte(ids[id])
			} else {
				binary.LittleEndian.PutUint16(o, ids[id])
			}
		}
	}
	return nil
}
