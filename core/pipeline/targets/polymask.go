package targets

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

func init() {
	pipeline.RegisterDecoder("polygon_mask", newPolygonMaskDecoder)
}

// polygonMaskDecoder rasterizes a polygon field, followed through its
// image pipeline, into one (H/ratio, W/ratio) instance map per sample
// (floor division, as Ultralytics' masks at ¼ resolution): value j + 1
// where row j of the polygons the ragged decoder keeps (the same rows, in
// the same order, as the boxes it goes with) covers the pixel's centre, 0
// elsewhere. Larger polygons are painted first, so a small object overlapping
// a large one lies on top: Ultralytics' overlap_mask map (its
// polygons2masks_overlap), except that the values index the rows as they
// are, not the rows sorted by area.
type polygonMaskDecoder struct {
	rows  *raggedDecoder
	ratio int
	w, h  int
	item  int
	out   pipeline.Spec
}

func newPolygonMaskDecoder(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		MaxRows  int                    `json:"max_rows"`
		Geometry *pipeline.GeometrySpec `json:"geometry"`
		Boxes    *int                   `json:"boxes"`
		Polygons *int                   `json:"polygons"`
		Ratio    int                    `json:"ratio"`
		BoxFilter
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.Ratio < 1 {
		return nil, fmt.Errorf("ratio %d must be at least 1", a.Ratio)
	}
	if err := pipeline.NeedType(env, field.Ragged); err != nil {
		return nil, err
	}
	if !isPolygons(env, env.Field) {
		return nil, fmt.Errorf("field %q is not a RaggedArrayField of polygons (coords='polygon')", env.Desc.Name)
	}
	if a.Geometry == nil {
		return nil, fmt.Errorf("a polygon mask needs the image pipeline its polygons follow")
	}
	inner, err := json.Marshal(struct {
		MaxRows  int                    `json:"max_rows"`
		Geometry *pipeline.GeometrySpec `json:"geometry"`
		Boxes    *int                   `json:"boxes,omitempty"`
		Polygons *int                   `json:"polygons,omitempty"`
		BoxFilter
	}{a.MaxRows, a.Geometry, a.Boxes, a.Polygons, a.BoxFilter})
	if err != nil {
		return nil, err
	}
	op, err := newRaggedDecoder(env, inner)
	if err != nil {
		return nil, err
	}
	d := &polygonMaskDecoder{rows: op.(*raggedDecoder), ratio: a.Ratio}
	d.item, _ = env.Desc.ItemSize()
	o := d.rows.geo.Out.Shape
	if o[0] < 1 || o[1] < 1 {
		return nil, fmt.Errorf("the followed image output has no fixed size (%v): a polygon mask needs one", o)
	}
	d.h, d.w = o[0]/a.Ratio, o[1]/a.Ratio
	if d.h < 1 || d.w < 1 {
		return nil, fmt.Errorf("ratio %d leaves nothing of a %dx%d image", a.Ratio, o[1], o[0])
	}
	// Ultralytics' dtypes: uint8 up to 255 instances, int32 past it.
	d.out = pipeline.Spec{Shape: []int{d.h, d.w}, DType: "|u1"}
	if a.MaxRows > 255 {
		d.out.DType = "<i4"
	}
	return d, nil
}

func (d *polygonMaskDecoder) Out(pipeline.Spec) (pipeline.Spec, error) { return d.out, nil }

// polyBuf is a worker's scratch: the kept rows, each polygon's spans, the
// painting order.
type polyBuf struct {
	rows  []byte
	spans [][]span
	area  []int
	order []int
	pts   []float64
	xs    []float64
}

// span is the pixels x0..x1-1 of row y.
type span struct{ y, x0, x1 int }

func (d *polygonMaskDecoder) Run(c *pipeline.Ctx, i int, in, out []byte) error {
	buf := c.State("polygon_mask", func() any { return &polyBuf{} }).(*polyBuf)
	buf.rows = pipeline.Grow(buf.rows, RaggedBytes(d.rows.maxRows, d.rows.row))
	if err := d.rows.Run(c, i, in, buf.rows); err != nil {
		return err
	}
	n := int(binary.LittleEndian.Uint64(buf.rows))
	for len(buf.spans) < n {
		buf.spans = append(buf.spans, nil)
	}
	buf.area, buf.order = buf.area[:0], buf.order[:0]
	k := d.rows.row / d.item
	for j := 0; j < n; j++ {
		row := buf.rows[RaggedHeader+j*d.rows.row : RaggedHeader+(j+1)*d.rows.row]
		buf.pts = buf.pts[:0]
		for p := 0; p < k; p++ {
			buf.pts = append(buf.pts, floatAt(row, d.item, p)/float64(d.ratio))
		}
		buf.spans[j], buf.xs = rasterize(buf.spans[j][:0], buf.xs, buf.pts, d.w, d.h)
		a := 0
		for _, s := range buf.spans[j] {
			a += s.x1 - s.x0
		}
		buf.area = append(buf.area, a)
		buf.order = append(buf.order, j)
	}
	sort.SliceStable(buf.order, func(x, y int) bool { return buf.area[buf.order[x]] > buf.area[buf.order[y]] })
	clear(out)
	for _, j := range buf.order {
		v := j + 1
		for _, s := range buf.spans[j] {
			row := s.y * d.w
			if d.out.DType == "|u1" {
				for x := s.x0; x < s.x1; x++ {
					out[row+x] = byte(v)
				}
				continue
			}
			for x := s.x0; x < s.x1; x++ {
				binary.LittleEndian.PutUint32(out[4*(row+x):], uint32(v))
			}
		}
	}
	return nil
}

// rasterize appends to dst the spans of the w×h pixels whose centres lie
// inside the polygon xy (x, y pairs in pixel units, pixel i spanning
// [i, i+1)), by the even-odd rule; xs is scratch space.
func rasterize(dst []span, xs, xy []float64, w, h int) ([]span, []float64) {
	n := len(xy) / 2
	if n < 3 {
		return dst, xs
	}
	y0, y1 := math.Inf(1), math.Inf(-1)
	for i := 0; i < n; i++ {
		y0, y1 = min(y0, xy[2*i+1]), max(y1, xy[2*i+1])
	}
	lo := max(int(math.Ceil(y0-0.5)), 0)
	hi := min(int(math.Ceil(y1-0.5)), h) // rows lo..hi-1 have centres in [y0, y1)
	for y := lo; y < hi; y++ {
		yc := float64(y) + 0.5
		xs = xs[:0]
		for i := 0; i < n; i++ {
			ax, ay := xy[2*i], xy[2*i+1]
			j := (i + 1) % n
			bx, by := xy[2*j], xy[2*j+1]
			if (ay <= yc) != (by <= yc) {
				xs = append(xs, ax+(yc-ay)*(bx-ax)/(by-ay))
			}
		}
		slices.Sort(xs)
		for k := 0; k+1 < len(xs); k += 2 {
			// Centres x + 0.5 in [xs[k], xs[k+1]).
			a := max(int(math.Ceil(xs[k]-0.5)), 0)
			b := min(int(math.Ceil(xs[k+1]-0.5)), w)
			if a < b {
				dst = append(dst, span{y, a, b})
			}
		}
	}
	return dst, xs
}
