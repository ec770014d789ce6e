package pipeline

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
)

// Per-sample image transforms on uint8 (H, W, C) samples, with FFCV 1.0's
// semantics. Random decisions come from c.Rand(op), so they depend only on
// (seed, epoch, position, operation).

func init() {
	Register("flip_h", newFlip(true))
	Register("flip_v", newFlip(false))
	Register("translate", newTranslate)
	Register("cutout", newCutout)
	Register("brightness", newBlend("brightness"))
	Register("contrast", newBlend("contrast"))
	Register("saturation", newBlend("saturation"))
	Register("grayscale", newGrayscale)
	Register("solarize", newSolarize)
	Register("random_crop", newRandomCrop)
	Register("normalize", newNormalize)
	Register("replace_label", newReplaceLabel)
	Register("poison", newPoison)
}

type flip struct {
	SameImage
	horizontal bool
	p          float64
	spec       Spec
}

func newFlip(horizontal bool) Factory {
	return func(_ Env, raw json.RawMessage) (Op, error) {
		var a struct {
			P float64 `json:"p"`
		}
		if err := Parse(raw, &a); err != nil {
			return nil, err
		}
		f := flip{horizontal: horizontal, p: a.P}
		if horizontal {
			return &hflip{f}, nil
		}
		return &f, nil
	}
}

// hflip is the horizontal flip, which a crop decoder before it may do
// itself (see pipeline.Fuser).
type hflip struct{ flip }

func (f *hflip) Flips(c *Ctx, key int) bool { return f.draw(c, key) }

func (f *flip) Out(in Spec) (Spec, error) { f.spec = in; return in, NeedImage(in) }

// draw is whether the sample is flipped: also replayed by targets (geometry.go).
func (f *flip) draw(c *Ctx, op int) bool { return c.Rand(op).Float64() < f.p }

// Reports: 1 when the sample is flipped, 0 otherwise.
func (f *flip) Reports() int { return 1 }

func (f *flip) Report(c *Ctx, key int, dst []float32) { dst[0] = b2f(f.draw(c, key)) }

func (f *flip) Place(c *Ctx, key, w, h int) (Step, error) {
	s := Same(w, h)
	switch {
	case !f.draw(c, key):
	case f.horizontal:
		s = s.FlipX()
	default:
		s = s.FlipY()
	}
	return s, nil
}

func (f *flip) Run(c *Ctx, op int, in, out []byte) error {
	CopyIfNeeded(out, in)
	if !f.draw(c, op) {
		return nil
	}
	h, w, ch := f.spec.Shape[0], f.spec.Shape[1], f.spec.Shape[2]
	if f.horizontal {
		imgproc.FlipHorizontal(out, w, h, ch)
		return nil
	}
	stride := w * ch
	tmp := make([]byte, stride)
	for t, b := 0, h-1; t < b; t, b = t+1, b-1 {
		copy(tmp, out[t*stride:(t+1)*stride])
		copy(out[t*stride:(t+1)*stride], out[b*stride:(b+1)*stride])
		copy(out[b*stride:(b+1)*stride], tmp)
	}
	return nil
}

// translate pads by `padding` with fill and takes a random window of the
// original size: the image moves by up to ±padding pixels.
type translate struct {
	padding int
	fill    []byte
	spec    Spec
}

func newTranslate(_ Env, raw json.RawMessage) (Op, error) {
	var a struct {
		Padding int   `json:"padding"`
		Fill    []int `json:"fill"`
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.Padding < 0 {
		return nil, fmt.Errorf("padding %d must not be negative", a.Padding)
	}
	return &translate{padding: a.Padding, fill: FillBytes(a.Fill)}, nil
}

// draw is the sample's shift: also replayed by targets (geometry.go).
func (t *translate) draw(c *Ctx, op int) (dy, dx int) {
	r := c.Rand(op)
	dy = r.IntN(2*t.padding+1) - t.padding
	return dy, r.IntN(2*t.padding+1) - t.padding
}

func (t *translate) Out(in Spec) (Spec, error) {
	t.spec = in
	if err := NeedImage(in); err != nil {
		return in, err
	}
	if len(t.fill) != in.Shape[2] {
		return in, fmt.Errorf("fill has %d values for %d channels", len(t.fill), in.Shape[2])
	}
	return in, nil
}

// Reports: the shift (dy, dx) drawn; output pixel (y, x) is input pixel
// (y + dy, x + dx).
func (t *translate) Reports() int { return 2 }

func (t *translate) Report(c *Ctx, key int, dst []float32) {
	dy, dx := t.draw(c, key)
	dst[0], dst[1] = float32(dy), float32(dx)
}

func (t *translate) Place(c *Ctx, key, w, h int) (Step, error) {
	dy, dx := t.draw(c, key)
	return Step{SX: 1, TX: -float64(dx), SY: 1, TY: -float64(dy), W: w, H: h}, nil
}

func (t *translate) Run(c *Ctx, op int, in, out []byte) error {
	h, w, ch := t.spec.Shape[0], t.spec.Shape[1], t.spec.Shape[2]
	dy, dx := t.draw(c, op)
	// out[y][x] = in[y+dy][x+dx] where inside, fill elsewhere.
	for y := 0; y < h; y++ {
		sy := y + dy
		row := out[y*w*ch : (y+1)*w*ch]
		for x := 0; x < w; x++ {
			sx := x + dx
			if sy < 0 || sy >= h || sx < 0 || sx >= w {
				copy(row[x*ch:(x+1)*ch], t.fill)
			} else {
				copy(row[x*ch:(x+1)*ch], in[(sy*w+sx)*ch:(sy*w+sx+1)*ch])
			}
		}
	}
	return nil
}

// cutout fills a random crop_size square that lies inside the image.
type cutout struct {
	SameImage
	PhotometricOp
	size int
	fill []byte
	spec Spec
}

func newCutout(_ Env, raw json.RawMessage) (Op, error) {
	var a struct {
		Size int   `json:"size"`
		Fill []int `json:"fill"`
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.Size < 1 {
		return nil, fmt.Errorf("crop_size %d must be positive", a.Size)
	}
	return &cutout{size: a.Size, fill: FillBytes(a.Fill)}, nil
}

func (t *cutout) Out(in Spec) (Spec, error) {
	t.spec = in
	if err := NeedImage(in); err != nil {
		return in, err
	}
	if t.size > in.Shape[0] || t.size > in.Shape[1] {
		return in, fmt.Errorf("crop_size %d is larger than the %dx%d image", t.size, in.Shape[0], in.Shape[1])
	}
	if len(t.fill) != in.Shape[2] {
		return in, fmt.Errorf("fill has %d values for %d channels", len(t.fill), in.Shape[2])
	}
	return in, nil
}

func (t *cutout) Run(c *Ctx, op int, in, out []byte) error {
	CopyIfNeeded(out, in)
	h, w, ch := t.spec.Shape[0], t.spec.Shape[1], t.spec.Shape[2]
	r := c.Rand(op)
	y0, x0 := r.IntN(h-t.size+1), r.IntN(w-t.size+1)
	for y := y0; y < y0+t.size; y++ {
		for x := x0; x < x0+t.size; x++ {
			copy(out[(y*w+x)*ch:(y*w+x+1)*ch], t.fill)
		}
	}
	return nil
}

// blend mixes the image with black (brightness), its mean grey level
// (contrast) or its greyscale version (saturation) by a factor drawn from
// U(max(0, 1-m), 1+m), with probability p; values are clipped to [0, 255]
// and truncated as numpy's astype(uint8) does.
type blend struct {
	SameImage
	PhotometricOp
	kind string
	m, p float64
	spec Spec
}

func newBlend(kind string) Factory {
	return func(_ Env, raw json.RawMessage) (Op, error) {
		var a struct {
			Magnitude float64 `json:"magnitude"`
			P         float64 `json:"p"`
		}
		if err := Parse(raw, &a); err != nil {
			return nil, err
		}
		if a.Magnitude < 0 {
			return nil, fmt.Errorf("magnitude %v must not be negative", a.Magnitude)
		}
		return &blend{kind: kind, m: a.Magnitude, p: a.P}, nil
	}
}

func (b *blend) Out(in Spec) (Spec, error) {
	b.spec = in
	if err := NeedImage(in); err != nil {
		return in, err
	}
	if b.kind != "brightness" && in.Shape[2] != 3 {
		return in, fmt.Errorf("%s needs RGB images", b.kind)
	}
	return in, nil
}

func gray(r, g, b byte) float64 {
	return float64(0.299*float64(r)) + float64(0.587*float64(g)) + float64(0.114*float64(b))
}

// blendGray is FFCV's grey level for contrast and saturation: its luma
// constants, truncated to uint8 as its astype does.
func blendGray(r, g, b byte) float64 {
	return float64(byte(float64(0.2989*float64(r)) + float64(0.587*float64(g)) + float64(0.114*float64(b))))
}

func clipU8(v float64) byte {
	if v <= 0 {
		return 0
	}
	if v >= 255 {
		return 255
	}
	return byte(v)
}

func (b *blend) Run(c *Ctx, op int, in, out []byte) error {
	CopyIfNeeded(out, in)
	r := c.Rand(op)
	if r.Float64() >= b.p {
		return nil
	}
	lo := max(0, 1-b.m)
	f := lo + float64(r.Float64()*(1+b.m-lo))
	switch b.kind {
	case "brightness":
		for i, v := range out {
			out[i] = clipU8(float64(v) * f)
		}
	case "contrast":
		var sum float64
		n := len(out) / 3
		for i := 0; i < n; i++ {
			sum += blendGray(out[3*i], out[3*i+1], out[3*i+2])
		}
		mean := sum / float64(max(n, 1))
		for i, v := range out {
			out[i] = clipU8(float64(f*float64(v)) + float64((1-f)*mean))
		}
	case "saturation":
		for i := 0; i+2 < len(out); i += 3 {
			g := blendGray(out[i], out[i+1], out[i+2])
			for k := 0; k < 3; k++ {
				out[i+k] = clipU8(float64(f*float64(out[i+k])) + float64((1-f)*g))
			}
		}
	}
	return nil
}

// grayscale replaces RGB by its luma (ITU-R 601) in all channels, with probability p.
type grayscale struct {
	SameImage
	PhotometricOp
	p float64
}

func newGrayscale(_ Env, raw json.RawMessage) (Op, error) {
	var a struct {
		P float64 `json:"p"`
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	return &grayscale{p: a.P}, nil
}

func (g *grayscale) Out(in Spec) (Spec, error) {
	if err := NeedImage(in); err != nil || in.Shape[2] != 3 {
		return in, fmt.Errorf("grayscale needs RGB images, got %v %s", in.Shape, in.DType)
	}
	return in, nil
}

func (g *grayscale) draw(c *Ctx, key int) bool { return c.Rand(key).Float64() < g.p }

// Reports: 0 when the image was turned grey, 1 otherwise (FFCV-SSL's
// convention).
func (g *grayscale) Reports() int { return 1 }

func (g *grayscale) Report(c *Ctx, key int, dst []float32) { dst[0] = b2f(!g.draw(c, key)) }

func (g *grayscale) Run(c *Ctx, op int, in, out []byte) error {
	CopyIfNeeded(out, in)
	if !g.draw(c, op) {
		return nil
	}
	for i := 0; i+2 < len(out); i += 3 {
		v := clipU8(gray(out[i], out[i+1], out[i+2]))
		out[i], out[i+1], out[i+2] = v, v, v
	}
	return nil
}

// solarize inverts the pixels at or above threshold, with probability p.
type solarize struct {
	SameImage
	PhotometricOp
	threshold int
	p         float64
}

func newSolarize(_ Env, raw json.RawMessage) (Op, error) {
	var a struct {
		Threshold int     `json:"threshold"`
		P         float64 `json:"p"`
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	return &solarize{threshold: a.Threshold, p: a.P}, nil
}

func (s *solarize) draw(c *Ctx, key int) bool { return c.Rand(key).Float64() < s.p }

// Reports: 1 when the image was solarized, 0 otherwise.
func (s *solarize) Reports() int { return 1 }

func (s *solarize) Report(c *Ctx, key int, dst []float32) { dst[0] = b2f(s.draw(c, key)) }

func (s *solarize) Run(c *Ctx, op int, in, out []byte) error {
	CopyIfNeeded(out, in)
	if !s.draw(c, op) {
		return nil
	}
	for i, v := range out {
		if int(v) >= s.threshold {
			out[i] = 255 - v
		}
	}
	return nil
}

// randomCrop pads by padding (zeros) then takes a random size window, as
// torchvision's RandomCrop(size, padding) does.
type randomCrop struct {
	h, w, padding int
	in            Spec
}

func newRandomCrop(_ Env, raw json.RawMessage) (Op, error) {
	var a struct {
		Size    [2]int `json:"size"`
		Padding int    `json:"padding"`
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.Size[0] < 1 || a.Size[1] < 1 || a.Padding < 0 {
		return nil, fmt.Errorf("bad size %v or padding %d", a.Size, a.Padding)
	}
	return &randomCrop{h: a.Size[0], w: a.Size[1], padding: a.Padding}, nil
}

func (t *randomCrop) Out(in Spec) (Spec, error) {
	t.in = in
	if err := NeedImage(in); err != nil {
		return in, err
	}
	if t.h > in.Shape[0]+2*t.padding || t.w > in.Shape[1]+2*t.padding {
		return in, fmt.Errorf("crop %dx%d is larger than the padded %dx%d image", t.h, t.w, in.Shape[0]+2*t.padding, in.Shape[1]+2*t.padding)
	}
	return Spec{Shape: []int{t.h, t.w, in.Shape[2]}, DType: "|u1"}, nil
}

// draw is the window's corner in a w×h input: also replayed by targets (geometry.go).
func (t *randomCrop) draw(c *Ctx, op, w, h int) (top, left int) {
	r := c.Rand(op)
	top = r.IntN(h+2*t.padding-t.h+1) - t.padding
	return top, r.IntN(w+2*t.padding-t.w+1) - t.padding
}

func (t *randomCrop) Place(c *Ctx, key, w, h int) (Step, error) {
	top, left := t.draw(c, key, w, h)
	return Step{SX: 1, TX: -float64(left), SY: 1, TY: -float64(top), W: t.w, H: t.h}, nil
}

func (t *randomCrop) Run(c *Ctx, op int, in, out []byte) error {
	h, w, ch := t.in.Shape[0], t.in.Shape[1], t.in.Shape[2]
	top, left := t.draw(c, op, w, h)
	for y := 0; y < t.h; y++ {
		sy := top + y
		for x := 0; x < t.w; x++ {
			sx := left + x
			d := out[(y*t.w+x)*ch : (y*t.w+x+1)*ch]
			if sy < 0 || sy >= h || sx < 0 || sx >= w {
				clear(d)
			} else {
				copy(d, in[(sy*w+sx)*ch:(sy*w+sx+1)*ch])
			}
		}
	}
	return nil
}

// normalize maps uint8 (H, W, C) to (x - mean[c]) / std[c] as float32 or
// float16. Like FFCV's lookup table, each of the 256 values per channel is
// computed in float64 and rounded once to the output type.
type normalize struct {
	PhotometricOp
	ch   int
	half bool
	f32  [][256]uint32 // [c][x]: float32 bits of channel c's value for x
	f16  [][256]uint16 // [c][x]: float16 bits
}

func newNormalize(_ Env, raw json.RawMessage) (Op, error) {
	// float64, as the caller gave them: FFCV computes its table from the
	// user's values, and rounding them to float32 first changes it.
	var a struct {
		Mean  []float64 `json:"mean"`
		Std   []float64 `json:"std"`
		DType string    `json:"dtype"`
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	if len(a.Mean) != len(a.Std) || len(a.Mean) == 0 {
		return nil, fmt.Errorf("mean and std need one value per channel")
	}
	for _, s := range a.Std {
		if s == 0 {
			return nil, fmt.Errorf("std has a zero")
		}
	}
	switch a.DType {
	case "<f4", "<f2":
	default:
		return nil, fmt.Errorf("type %q must be float16 or float32", a.DType)
	}
	n := &normalize{ch: len(a.Mean), half: a.DType == "<f2"}
	n.f16, n.f32 = make([][256]uint16, n.ch), make([][256]uint32, n.ch)
	for k := range a.Mean {
		for x := 0; x < 256; x++ {
			v := (float64(x) - a.Mean[k]) / a.Std[k]
			n.f16[k][x], n.f32[k][x] = float16of64(v), math.Float32bits(float32(v))
		}
	}
	return n, nil
}

// NormalizeTable returns the table of a normalize spec: for each byte value
// (rows) and channel (columns), the output value's little-endian bytes, and
// the output's dtype. The GPU path looks its values up in it, so that both
// paths give the same numbers.
func NormalizeTable(raw json.RawMessage) (table []byte, channels int, dtype string, err error) {
	op, err := newNormalize(Env{}, raw)
	if err != nil {
		return nil, 0, "", fmt.Errorf("normalize: %w", err)
	}
	n := op.(*normalize)
	size, dtype := 4, "<f4"
	if n.half {
		size, dtype = 2, "<f2"
	}
	table = make([]byte, 256*n.ch*size)
	for x := 0; x < 256; x++ {
		for c := 0; c < n.ch; c++ {
			o := (x*n.ch + c) * size
			if n.half {
				binary.LittleEndian.PutUint16(table[o:], n.f16[c][x])
			} else {
				binary.LittleEndian.PutUint32(table[o:], n.f32[c][x])
			}
		}
	}
	return table, n.ch, dtype, nil
}

func (n *normalize) Out(in Spec) (Spec, error) {
	if err := NeedImage(in); err != nil {
		return in, err
	}
	if in.Shape[2] != n.ch {
		return in, fmt.Errorf("mean has %d values for %d channels", n.ch, in.Shape[2])
	}
	dt := "<f4"
	if n.half {
		dt = "<f2"
	}
	return Spec{Shape: in.Shape, DType: dt}, nil
}

func (n *normalize) Run(_ *Ctx, _ int, in, out []byte) error {
	// One 256-entry table per channel, indexed by the byte: no division
	// and no bounds checks in the loops.
	if n.half && n.ch == 3 {
		t0, t1, t2 := &n.f16[0], &n.f16[1], &n.f16[2]
		for p := 0; p+3 <= len(in); p += 3 {
			px, o := in[p:p+3:p+3], out[2*p:2*p+6:2*p+6]
			binary.LittleEndian.PutUint16(o, t0[px[0]])
			binary.LittleEndian.PutUint16(o[2:], t1[px[1]])
			binary.LittleEndian.PutUint16(o[4:], t2[px[2]])
		}
		return nil
	}
	for p := 0; p+n.ch <= len(in); p += n.ch {
		for c := 0; c < n.ch; c++ {
			if n.half {
				binary.LittleEndian.PutUint16(out[2*(p+c):], n.f16[c][in[p+c]])
			} else {
				binary.LittleEndian.PutUint32(out[4*(p+c):], n.f32[c][in[p+c]])
			}
		}
	}
	return nil
}

// float16of64 rounds x to float16 once: rounding to float32 first with
// round-to-odd (13 spare bits and a sticky bit) keeps the final
// round-to-nearest-even exact, where plain double rounding may not be.
func float16of64(x float64) uint16 {
	f := float32(x)
	if d := float64(f); d != x && !math.IsNaN(x) && !math.IsInf(d, 0) {
		if math.Abs(d) > math.Abs(x) {
			f = math.Nextafter32(f, 0) // truncate toward zero
		}
		f = math.Float32frombits(math.Float32bits(f) | 1) // inexact: make it odd
	}
	return float16(f)
}

// float16 converts with round-to-nearest-even, as numpy's astype(float16).
func float16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case b&0x7fffffff == 0:
		return sign
	case int(b>>23&0xff) == 0xff: // inf or nan
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp >= 0x1f:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		half := uint32(1) << (shift - 1)
		v := mant >> shift
		rem := mant & (1<<shift - 1)
		if rem > half || (rem == half && v&1 == 1) {
			v++
		}
		return sign | uint16(v)
	}
	v := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && v&1 == 1) {
		v++ // may carry into the exponent, which is still correct
	}
	return sign | uint16(v)
}

// replaceLabel sets an int64 label to newLabel for the listed sample ids.
type replaceLabel struct {
	ids   map[uint64]bool
	label int64
}

func newReplaceLabel(_ Env, raw json.RawMessage) (Op, error) {
	var a struct {
		Indices []uint64 `json:"indices"`
		Label   int64    `json:"label"`
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	r := &replaceLabel{ids: map[uint64]bool{}, label: a.Label}
	for _, i := range a.Indices {
		r.ids[i] = true
	}
	return r, nil
}

func (r *replaceLabel) Out(in Spec) (Spec, error) {
	if in.DType != "<i8" || len(in.Shape) != 1 || in.Shape[0] != 1 {
		return in, fmt.Errorf("needs int64 (1,) labels, got %v %s", in.Shape, in.DType)
	}
	return in, nil
}
func (r *replaceLabel) InPlace() bool { return true }

func (r *replaceLabel) Run(c *Ctx, _ int, in, out []byte) error {
	CopyIfNeeded(out, in)
	if r.ids[c.Sample] {
		binary.LittleEndian.PutUint64(out, uint64(r.label))
	}
	return nil
}

// poison blends the listed samples with a mask: clip((1-alpha)·x + alpha·mask),
// alpha one value, or one per pixel (FFCV's H×W alpha array, alphaMap).
type poison struct {
	SameImage
	PhotometricOp
	mask     []float32
	alpha    float32
	alphaMap []float32
	ids      map[uint64]bool
	lo, hi   float32
	spec     Spec
}

func newPoison(_ Env, raw json.RawMessage) (Op, error) {
	var a struct {
		Mask    []float32  `json:"mask"`
		Shape   []int      `json:"mask_shape"`
		Alpha   float32    `json:"alpha"`
		Map     []float32  `json:"alpha_map"`
		Indices []uint64   `json:"indices"`
		Clamp   [2]float32 `json:"clamp"`
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	p := &poison{mask: a.Mask, alpha: a.Alpha, alphaMap: a.Map, ids: map[uint64]bool{}, lo: a.Clamp[0], hi: a.Clamp[1]}
	for _, i := range a.Indices {
		p.ids[i] = true
	}
	return p, nil
}

func (p *poison) Out(in Spec) (Spec, error) {
	if err := NeedImage(in); err != nil {
		return in, err
	}
	if len(p.mask) != in.Bytes() {
		return in, fmt.Errorf("mask has %d values, the images %v", len(p.mask), in.Shape)
	}
	if p.alphaMap != nil && len(p.alphaMap)*in.Shape[2] != in.Bytes() {
		return in, fmt.Errorf("alpha has %d values, one per pixel of the images %v needs %d",
			len(p.alphaMap), in.Shape, in.Bytes()/in.Shape[2])
	}
	return in, nil
}

func (p *poison) Run(c *Ctx, _ int, in, out []byte) error {
	CopyIfNeeded(out, in)
	if !p.ids[c.Sample] {
		return nil
	}
	channels := len(out)
	if p.alphaMap != nil {
		channels = len(out) / len(p.alphaMap)
	}
	for i, v := range out {
		alpha := p.alpha
		if p.alphaMap != nil {
			alpha = p.alphaMap[i/channels]
		}
		f := float32((1-alpha)*float32(v)) + float32(alpha*p.mask[i])
		out[i] = clipU8(float64(min(max(f, p.lo), p.hi)))
	}
	return nil
}
