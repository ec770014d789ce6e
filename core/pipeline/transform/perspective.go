package transform

import (
	"encoding/json"
	"fmt"
	"image"
	"math"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

func init() { pipeline.Register("random_perspective", newPerspective) }

// perspective is Ultralytics YOLO's RandomPerspective: a matrix
// M = T·S·R·P·C (centre, perspective, rotation and scale, shear,
// translation; float32, as its numpy arrays) warps the image onto an
// output border pixels larger on each side, bilinear with OpenCV's fixed
// point (warpAffine where perspective is 0, else warpPerspective), fill
// outside.
type perspective struct {
	degrees, translate, scale, shear, persp float64
	border                                  [2]int // rows (top and bottom), columns (left and right)
	fill                                    []byte
	in, out                                 pipeline.Spec
}

func newPerspective(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	a := struct {
		Degrees     float64 `json:"degrees"`
		Translate   float64 `json:"translate"`
		Scale       float64 `json:"scale"`
		Shear       float64 `json:"shear"`
		Perspective float64 `json:"perspective"`
		Border      [2]int  `json:"border"`
		Fill        []int   `json:"fill"`
	}{}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"degrees", a.Degrees}, {"translate", a.Translate}, {"scale", a.Scale}, {"shear", a.Shear}, {"perspective", a.Perspective}} {
		if !(v.v >= 0) || math.IsInf(v.v, 0) {
			return nil, fmt.Errorf("%s %v must be finite and not negative", v.name, v.v)
		}
	}
	if a.Shear >= 90 {
		return nil, fmt.Errorf("shear %v must be under 90 degrees", a.Shear)
	}
	fill := []byte{114} // YOLO's grey, on every channel
	if a.Fill != nil {
		var err error
		if fill, err = pipeline.Bytes("fill", a.Fill); err != nil {
			return nil, err
		}
	}
	return &perspective{degrees: a.Degrees, translate: a.Translate, scale: a.Scale, shear: a.Shear,
		persp: a.Perspective, border: a.Border, fill: fill}, nil
}

func (t *perspective) Out(in pipeline.Spec) (pipeline.Spec, error) {
	t.in = in
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	ch := in.Shape[2]
	if len(t.fill) == 1 {
		t.fill = []byte{t.fill[0], t.fill[0], t.fill[0], t.fill[0]}[:min(ch, 4)]
	}
	if len(t.fill) != ch {
		return in, fmt.Errorf("fill has %d values for %d channels", len(t.fill), ch)
	}
	h, w := in.Shape[0]+2*t.border[0], in.Shape[1]+2*t.border[1]
	if h < 1 || w < 1 || h > pipeline.MaxSide || w > pipeline.MaxSide {
		return in, fmt.Errorf("border %v makes a %dx%d image %dx%d", t.border, in.Shape[1], in.Shape[0], w, h)
	}
	t.out = pipeline.Spec{Shape: []int{h, w, ch}, DType: in.DType}
	return t.out, nil
}

// Draws, in the order YOLO's affine_transform makes them: perspective
// about y and about x, rotation (degrees), scale, shear x and y (degrees),
// translation x and y (fractions of the output's width and height).
const perspectiveDraws = 8

// draw is the sample's draws, each a float32 value so that Report gives
// them exactly: Run, Place and Report all read it.
func (t *perspective) draw(c *pipeline.Ctx, key int) (d [perspectiveDraws]float64) {
	r := c.Rand(key)
	// The conversions keep any CPU from fusing the multiply-add.
	u := func(lo, hi float64) float64 { return float64(float32(lo + float64((hi-lo)*r.Float64()))) }
	d[0], d[1] = u(-t.persp, t.persp), u(-t.persp, t.persp)
	d[2] = u(-t.degrees, t.degrees)
	d[3] = u(1-t.scale, 1+t.scale)
	d[4], d[5] = u(-t.shear, t.shear), u(-t.shear, t.shear)
	d[6], d[7] = u(0.5-t.translate, 0.5+t.translate), u(0.5-t.translate, 0.5+t.translate)
	return d
}

// matrix is YOLO's M = T·S·R·P·C of draws d for a w×h input and an ow×oh
// output, in float32 as its numpy arrays.
func perspectiveMatrix(d [perspectiveDraws]float64, w, h, ow, oh int) [9]float32 {
	id := [9]float32{1, 0, 0, 0, 1, 0, 0, 0, 1}
	C, P, R, S, T := id, id, id, id, id
	C[2], C[5] = float32(-float64(w)/2), float32(-float64(h)/2)
	P[6], P[7] = float32(d[0]), float32(d[1])
	// cv2.getRotationMatrix2D(center=(0, 0), angle=d[2], scale=d[3]).
	rad := d[2] * math.Pi / 180
	al, be := d[3]*math.Cos(rad), d[3]*math.Sin(rad)
	R[0], R[1], R[3], R[4] = float32(al), float32(be), float32(-be), float32(al)
	S[1], S[3] = float32(math.Tan(d[4]*math.Pi/180)), float32(math.Tan(d[5]*math.Pi/180))
	T[2], T[5] = float32(d[6]*float64(ow)), float32(d[7]*float64(oh))
	return mul32(mul32(mul32(mul32(T, S), R), P), C)
}

// matrix is the sample's M and scale.
func (t *perspective) matrix(c *pipeline.Ctx, key int) ([9]float32, float64) {
	d := t.draw(c, key)
	return perspectiveMatrix(d, t.in.Shape[1], t.in.Shape[0], t.out.Shape[1], t.out.Shape[0]), d[3]
}

// mul32 is a float32 3×3 product, each entry summed in order.
func mul32(a, b [9]float32) [9]float32 {
	var r [9]float32
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			v := float32(a[3*i] * b[j])
			v = float32(v + float32(a[3*i+1]*b[3+j]))
			r[3*i+j] = float32(v + float32(a[3*i+2]*b[6+j]))
		}
	}
	return r
}

// Reports: the 8 draws (see perspectiveDraws), from which YOLO's
// affine_transform, given them for its random.uniform calls in order,
// builds the sample's matrix for the image's size.
func (t *perspective) Reports() int { return perspectiveDraws }

func (t *perspective) Report(c *pipeline.Ctx, key int, dst []float32) {
	for i, v := range t.draw(c, key) {
		dst[i] = float32(v)
	}
}

// Place is M in continuous coordinates (pixel i spans [i, i+1)), where
// OpenCV's pixel centres are: M moved by half a pixel on both sides. YOLO
// maps box coordinates by M itself, half a pixel off the pixels where the
// scale or rotation is not 1: |(I − L)·(0.5, 0.5)| for M's linear part L.
func (t *perspective) Place(c *pipeline.Ctx, key, w, h int) (pipeline.Step, error) {
	m32, s := t.matrix(c, key)
	var m pipeline.Matrix
	for i, v := range m32 {
		m[i] = float64(v)
	}
	m = pipeline.AxisMatrix(1, 0.5, 1, 0.5).Mul(m).Mul(pipeline.AxisMatrix(1, -0.5, 1, -0.5))
	return pipeline.WarpStep(m, s*s, t.out.Shape[1], t.out.Shape[0]), nil
}

// Reads is the part of the input the warp samples (pipeline.RegionReader):
// the output's corner pixels mapped back through M, widened by two pixels
// for the bilinear neighbours and OpenCV's fixed-point coordinates. The
// input's image of the output rectangle is convex, so its corners bound
// it, unless the projection puts some of them behind the horizon: then
// everything is read.
func (t *perspective) Reads(c *pipeline.Ctx, key, w, h int) image.Rectangle {
	all := image.Rect(0, 0, w, h)
	m32, _ := t.matrix(c, key)
	if t.border == [2]int{} && m32 == [9]float32{1, 0, 0, 0, 1, 0, 0, 0, 1} {
		return all // copied whole
	}
	var m pipeline.Matrix
	for i, v := range m32 {
		m[i] = float64(v)
	}
	inv, ok := m.Inverse()
	if !ok {
		return all
	}
	ow, oh := float64(t.out.Shape[1]-1), float64(t.out.Shape[0]-1)
	x0, y0, x1, y1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	sign := 0.0
	for _, p := range [4][2]float64{{0, 0}, {ow, 0}, {0, oh}, {ow, oh}} {
		z := inv[6]*p[0] + inv[7]*p[1] + inv[8]
		if z == 0 || sign*z < 0 {
			return all
		}
		sign = math.Copysign(1, z)
		x := (inv[0]*p[0] + inv[1]*p[1] + inv[2]) / z
		y := (inv[3]*p[0] + inv[4]*p[1] + inv[5]) / z
		x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
	}
	if math.IsNaN(x0 + y0 + x1 + y1) {
		return all
	}
	const margin = 2
	// Clamped to just outside the input before converting, so that a
	// corner mapped far away cannot overflow an int.
	cx := func(v float64) int { return int(math.Floor(min(max(v, -8), float64(w)+8))) }
	cy := func(v float64) int { return int(math.Floor(min(max(v, -8), float64(h)+8))) }
	r := image.Rect(cx(x0)-margin, cy(y0)-margin, cx(x1)+1+margin, cy(y1)+1+margin)
	return r.Intersect(all)
}

func (t *perspective) Run(c *pipeline.Ctx, key int, in, out []byte) error {
	m32, _ := t.matrix(c, key)
	h, w, ch := t.in.Shape[0], t.in.Shape[1], t.in.Shape[2]
	oh, ow := t.out.Shape[0], t.out.Shape[1]
	if t.border == [2]int{} && m32 == [9]float32{1, 0, 0, 0, 1, 0, 0, 0, 1} {
		copy(out, in) // YOLO leaves an unchanged image alone
		return nil
	}
	var m [9]float64
	for i, v := range m32 {
		m[i] = float64(v)
	}
	if t.persp != 0 {
		imgproc.WarpPerspectiveCV(out, oh, ow, in, h, w, ch, m, t.fill)
	} else {
		imgproc.WarpAffineCV(out, oh, ow, in, h, w, ch, [6]float64(m[:6]), t.fill)
	}
	return nil
}
