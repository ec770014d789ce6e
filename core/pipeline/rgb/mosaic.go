package rgb

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"math"
	"slices"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// mosaic is YOLO's Mosaic as a decoder: the sample's image and 3 (or 8)
// partners, each resized so its longer side is imgsz, laid around a centre
// on a 2·imgsz square filled with fill, as Ultralytics' Mosaic lays them
// (the following RandomPerspective with border -imgsz/2 crops it back to
// imgsz). Partners are drawn uniformly from the whole file with the
// sample's key, so the batches do not depend on the worker count; they are
// read through the file's map (the OS page cache). Where the mosaic is not
// applied (probability 1-p, or from epoch close_epoch on) the output is the
// sample alone, letterboxed into the square's centre imgsz×imgsz, which is
// what Ultralytics' LetterBox gives after the same RandomPerspective. It is
// a pipeline.Mixer: targets follow each tile from its own sample.
type mosaic struct {
	s, n  int // imgsz; 4 or 9 tiles
	p     float64
	close *uint64 // the first epoch without the mosaic (close_mosaic), nil: never
	fill  [3]byte
	r     *beton.Reader
	f     int
	// next, when set, reads only part of the canvas (a RandomPerspective
	// that crops it back to imgsz): Run decodes and writes only that part.
	next    pipeline.RegionReader
	nextKey int
}

type mosaicArgs struct {
	Size       int      `json:"imgsz"`
	N          int      `json:"n"`
	P          *float64 `json:"p"`
	CloseEpoch *int64   `json:"close_epoch"`
	Fill       []int    `json:"fill"`
}

func parseMosaic(raw json.RawMessage) (*mosaic, error) {
	var a mosaicArgs
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.Size < 2 || a.Size%2 != 0 || 2*a.Size > pipeline.MaxSide {
		return nil, fmt.Errorf("imgsz %d must be even, in [2, %d]", a.Size, pipeline.MaxSide/2)
	}
	if a.N != 4 && a.N != 9 {
		return nil, fmt.Errorf("n %d must be 4 or 9 (tiles)", a.N)
	}
	m := &mosaic{s: a.Size, n: a.N, p: 1, fill: [3]byte{114, 114, 114}}
	if a.P != nil {
		if err := pipeline.Prob("p", *a.P); err != nil {
			return nil, err
		}
		m.p = *a.P
	}
	if a.CloseEpoch != nil {
		if *a.CloseEpoch < 0 {
			return nil, fmt.Errorf("close_epoch %d must not be negative", *a.CloseEpoch)
		}
		e := uint64(*a.CloseEpoch)
		m.close = &e
	}
	if a.Fill != nil {
		fill, err := pipeline.Bytes("fill", a.Fill)
		if err != nil {
			return nil, err
		}
		if len(fill) != 3 {
			return nil, fmt.Errorf("fill needs 3 values, got %d", len(fill))
		}
		copy(m.fill[:], fill)
	}
	return m, nil
}

func newMosaic(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	m, err := parseMosaic(raw)
	if err != nil {
		return nil, err
	}
	if err := m.attach(env); err != nil {
		return nil, err
	}
	return m, nil
}

// attach checks the field and keeps the file the partners come from.
func (m *mosaic) attach(env pipeline.Env) error {
	if err := pipeline.NeedType(env, field.RGBImage); err != nil {
		return err
	}
	if env.Reader.NumSamples() == 0 {
		return fmt.Errorf("the file has no samples to draw partners from")
	}
	m.r, m.f = env.Reader, env.Field
	return nil
}

func (m *mosaic) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{2 * m.s, 2 * m.s, 3}, DType: "|u1"}, nil
}

// mosaicDraw is what the op draws for a sample: whether the mosaic
// applies, its centre (4 tiles) and the samples of the tiles, the
// sample's own first.
type mosaicDraw struct {
	on      bool
	xc, yc  int
	samples [9]uint64
}

func (m *mosaic) draw(c *pipeline.Ctx, key int) mosaicDraw {
	r := c.Rand(key)
	d := mosaicDraw{samples: [9]uint64{c.Sample}}
	if r.Float64() >= m.p || m.close != nil && c.Epoch >= *m.close {
		return d
	}
	d.on = true
	if m.n == 4 { // Ultralytics: int(uniform(imgsz/2, 3·imgsz/2)), y first
		d.yc = m.s/2 + int(r.Float64()*float64(m.s))
		d.xc = m.s/2 + int(r.Float64()*float64(m.s))
	}
	for k := 1; k < m.n; k++ {
		d.samples[k] = r.Uint64N(m.r.NumSamples())
	}
	return d
}

// tile is one image of the output: sample's stored w0×h0 image resized to
// w×h, its top-left corner at (x, y) of the output (possibly outside it).
type tile struct {
	sample       uint64
	w0, h0, w, h int
	x, y         int
}

// fitSize is Ultralytics' load_image size: the longer side imgsz, each side
// ceil(side·imgsz/longer) at most imgsz, in the same float arithmetic.
func fitSize(s, w0, h0 int) (int, int) {
	r := float64(s) / float64(max(w0, h0))
	if r == 1 {
		return w0, h0
	}
	return min(int(math.Ceil(float64(w0)*r)), s), min(int(math.Ceil(float64(h0)*r)), s)
}

// layout places the tiles of draw d, in the order Run paints them (later
// tiles over earlier ones, as Ultralytics' 9-tile mosaic overlaps them).
func (m *mosaic) layout(d mosaicDraw, dst []tile) ([]tile, error) {
	k := 1
	if d.on {
		k = m.n
	}
	ts := dst[:0]
	for _, sample := range d.samples[:k] {
		col, err := m.r.Column(sample, m.f)
		if err != nil {
			return nil, err
		}
		im := imageOf(col)
		if im.w < 1 || im.h < 1 {
			return nil, fmt.Errorf("%w: sample %d: empty %dx%d image", field.ErrData, sample, im.w, im.h)
		}
		w, h := fitSize(m.s, im.w, im.h)
		ts = append(ts, tile{sample: sample, w0: im.w, h0: im.h, w: w, h: h})
	}
	m.place(d, ts)
	return ts, nil
}

// place sets the tiles' positions, their sizes set.
func (m *mosaic) place(d mosaicDraw, ts []tile) {
	s, half := m.s, m.s/2
	switch {
	case !d.on: // LetterBox's centred padding (its rounding: the smaller half first)
		ts[0].x, ts[0].y = half+(s-ts[0].w)/2, half+(s-ts[0].h)/2
	case m.n == 4: // top left, top right, bottom left, bottom right of (xc, yc)
		for i := range ts {
			t := &ts[i]
			t.x, t.y = d.xc, d.yc
			if i%2 == 0 {
				t.x -= t.w
			}
			if i < 2 {
				t.y -= t.h
			}
		}
	default: // around the centre tile of a 3·imgsz square, whose middle 2·imgsz is the output
		w0, h0 := ts[0].w, ts[0].h
		for i := range ts {
			w, h := ts[i].w, ts[i].h
			var wp, hp int // the previous tile's
			if i > 0 {
				wp, hp = ts[i-1].w, ts[i-1].h
			}
			var x, y int
			switch i {
			case 0:
				x, y = s, s
			case 1: // top
				x, y = s, s-h
			case 2: // top right
				x, y = s+wp, s-h
			case 3: // right
				x, y = s+w0, s
			case 4: // bottom right
				x, y = s+w0, s+hp
			case 5: // bottom
				x, y = s+w0-w, s+h0
			case 6: // bottom left
				x, y = s+w0-wp-w, s+h0
			case 7: // left
				x, y = s-w, s+h0-h
			case 8: // top left
				x, y = s-w, s+h0-hp-h
			}
			// What lies outside the output is cut, as Ultralytics cuts
			// at the 3·imgsz square and then at its middle.
			ts[i].x, ts[i].y = x-half, y-half
		}
	}
}

// mosaicBuf is a worker's tiles and resized image.
type mosaicBuf struct {
	tiles []tile
	img   []byte
}

// ReadBy links the mosaic to the operation after it (pipeline.RegionWriter).
func (m *mosaic) ReadBy(next pipeline.RegionReader, key int) { m.next, m.nextKey = next, key }

func (m *mosaic) Run(c *pipeline.Ctx, key int, _, out []byte) error {
	buf := c.State("mosaic", func() any { return &mosaicBuf{} }).(*mosaicBuf)
	ts, err := m.layout(m.draw(c, key), buf.tiles)
	if err != nil {
		return err
	}
	buf.tiles = ts
	side := 2 * m.s
	need := image.Rect(0, 0, side, side)
	if m.next != nil {
		need = need.Intersect(m.next.Reads(c, m.nextKey, side, side))
	}
	fillUncovered(out, side, need, ts, m.fill)
	for _, t := range ts {
		// vis is the part of the tile that is read, in tile pixels.
		vis := image.Rect(t.x, t.y, t.x+t.w, t.y+t.h).Intersect(need).Sub(image.Pt(t.x, t.y))
		if vis.Empty() {
			continue
		}
		col, heap := c.Col, c.Heap
		if t.sample != c.Sample {
			if col, heap, err = m.r.Read(t.sample, m.f); err != nil {
				return fmt.Errorf("partner sample %d: %w", t.sample, err)
			}
		}
		if err := m.paintTile(c, buf, imageOf(col), heap, t, vis, out); err != nil {
			return fmt.Errorf("sample %d: %w", t.sample, err)
		}
	}
	return nil
}

// paintTile decodes the part vis of tile t (in tile pixels) into its place
// on the canvas out. A JPEG at the tile's own size is decoded from vis
// only, straight into the canvas, which gives the same pixels (no resize,
// and the decoder decodes past a crop's edges what upsampling needs); any
// other is decoded and resized whole, as resizing a part could round
// differently, then copied.
func (m *mosaic) paintTile(c *pipeline.Ctx, buf *mosaicBuf, im imageRef, heap []byte, t tile, vis image.Rectangle,
	out []byte) error {
	side := 2 * m.s
	at := ((t.y+vis.Min.Y)*side + t.x + vis.Min.X) * 3
	if im.mode == field.ModeJPEG && t.w == t.w0 && t.h == t.h0 {
		dec := soloDecoder(c)
		if err := dec.DecodeCropInto(heap, vis, out[at:], side*3); err != nil {
			return fmt.Errorf("%w: %v", field.ErrData, err)
		}
		timed(c, dec)
		return nil
	}
	buf.img = pipeline.Grow(buf.img, t.w*t.h*3)
	if err := resizeWhole(c, im, heap, t.w, t.h, buf.img); err != nil {
		return err
	}
	n := vis.Dx() * 3
	for y := vis.Min.Y; y < vis.Max.Y; y++ {
		copy(out[at+(y-vis.Min.Y)*side*3:][:n], buf.img[(y*t.w+vis.Min.X)*3:])
	}
	return nil
}

// fillUncovered fills the pixels of need, in the side×side canvas, that no
// tile covers (the tiles are copied over the rest).
func fillUncovered(out []byte, side int, need image.Rectangle, ts []tile, fill [3]byte) {
	var spans [9][2]int
	for y := need.Min.Y; y < need.Max.Y; y++ {
		n := 0
		for _, t := range ts {
			if y >= t.y && y < t.y+t.h && t.x < need.Max.X && t.x+t.w > need.Min.X {
				spans[n] = [2]int{max(t.x, need.Min.X), min(t.x+t.w, need.Max.X)}
				n++
			}
		}
		slices.SortFunc(spans[:n], func(a, b [2]int) int { return a[0] - b[0] })
		row, x := out[y*side*3:(y*side+need.Max.X)*3], need.Min.X
		for _, sp := range spans[:n] {
			if sp[0] > x {
				imgproc.FillRGB(row[3*x:3*sp[0]], fill)
			}
			x = max(x, sp[1])
		}
		if x < need.Max.X {
			imgproc.FillRGB(row[3*x:], fill)
		}
	}
}

// resizeWhole decodes image im (its heap bytes) resized to w×h into dst.
func resizeWhole(c *pipeline.Ctx, im imageRef, heap []byte, w, h int, dst []byte) error {
	if im.mode == field.ModeJPEG {
		dec := soloDecoder(c)
		if err := dec.DecodeCropResizeFlip(heap, image.Rect(0, 0, im.w, im.h), w, h, dst, false); err != nil {
			return fmt.Errorf("%w: %v", field.ErrData, err)
		}
		timed(c, dec)
		return nil
	}
	if len(heap) != im.w*im.h*3 {
		return fmt.Errorf("%w: raw image has %d bytes, expected %d", field.ErrData, len(heap), im.w*im.h*3)
	}
	if w == im.w && h == im.h {
		copy(dst, heap)
		return nil
	}
	resizerOf(c).ResizeAreaFlip(dst, w, h, heap, im.w, im.h, im.w*3, 3, false)
	return nil
}

// Pieces are the tiles: each stored image scaled to its tile and moved to
// its place; clipped to the output, which is where Ultralytics clips boxes.
func (m *mosaic) Pieces(c *pipeline.Ctx, key int, dst []pipeline.Piece) ([]pipeline.Piece, error) {
	var buf [9]tile
	ts, err := m.layout(m.draw(c, key), buf[:0])
	if err != nil {
		return nil, err
	}
	side := 2 * m.s
	for _, t := range ts {
		st := pipeline.Step{SX: float64(t.w) / float64(t.w0), TX: float64(t.x),
			SY: float64(t.h) / float64(t.h0), TY: float64(t.y), W: side, H: side}
		dst = append(dst, pipeline.Piece{Sample: t.sample, Map: pipeline.Identity(t.w0, t.h0).Then(st)})
	}
	return dst, nil
}

// labelMosaic reports what the mosaic with the same arguments and seed
// draws, as int64 (applied, xc, yc, partner 1, ..., partner n-1): applied
// 1 or 0; (xc, yc) where the 4 tiles meet, -1 with 9 tiles (Ultralytics
// places them without a random centre) or where not applied; partners -1
// where not applied. It reads only the images' metadata.
type labelMosaic struct{ m *mosaic }

func newLabelMosaic(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	m, err := parseMosaic(raw)
	if err != nil {
		return nil, err
	}
	if err := pipeline.NeedSeed(raw); err != nil {
		return nil, err
	}
	if err := m.attach(env); err != nil {
		return nil, err
	}
	return &labelMosaic{m}, nil
}

func (l *labelMosaic) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{2 + l.m.n}, DType: "<i8"}, nil
}

func (l *labelMosaic) Run(c *pipeline.Ctx, key int, _, out []byte) error {
	d := l.m.draw(c, key)
	var buf [11]int64
	v := buf[:0]
	switch {
	case !d.on:
		v = append(v, 0, -1, -1)
	case l.m.n == 4:
		v = append(v, 1, int64(d.xc), int64(d.yc))
	default:
		v = append(v, 1, -1, -1)
	}
	for k := 1; k < l.m.n; k++ {
		p := int64(-1)
		if d.on {
			p = int64(d.samples[k])
		}
		v = append(v, p)
	}
	for i, x := range v {
		binary.LittleEndian.PutUint64(out[8*i:], uint64(x))
	}
	return nil
}
