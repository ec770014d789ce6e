package pipeline

import (
	"encoding/json"
	"fmt"
	"image"
	"math"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
)

// FFCV-SSL's rotation (imgproc.Rotate: torchvision's tensor semantics),
// centre and corner crops, and torchvision's RandomErasing.

func init() {
	Register("rotate", newRotate)
	Register("center_crop", newFixedCrop(false))
	Register("corner_crop", newFixedCrop(true))
	Register("random_erasing", newRandomErasing)
}

// rotate is FFCV-SSL's Rotate with torchvision's rotation: with probability
// p, an angle drawn from U(-angle, angle) radians.
type rotate struct {
	p, angle float64
	bilinear bool
	fill     []float32
	spec     Spec
}

func newRotate(_ Env, raw json.RawMessage) (Op, error) {
	var a struct {
		P             float64   `json:"p"`
		Angle         float64   `json:"angle"`
		Interpolation string    `json:"interpolation"`
		Fill          []float32 `json:"fill"`
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	bil, err := ParseInterp(a.Interpolation)
	if err != nil {
		return nil, err
	}
	if a.Angle < 0 {
		return nil, fmt.Errorf("angle %v must not be negative", a.Angle)
	}
	return &rotate{p: a.P, angle: a.Angle, bilinear: bil, fill: a.Fill}, nil
}

func (t *rotate) Out(in Spec) (Spec, error) {
	t.spec = in
	if err := NeedImage(in); err != nil {
		return in, err
	}
	return in, CheckFill(t.fill, in.Shape[2])
}

// draw is the rotation's draw: whether it applies and its angle (radians).
func (t *rotate) draw(c *Ctx, key int) (bool, float64) {
	r := c.Rand(key)
	apply := r.Float64() < t.p
	return apply, -t.angle + float64(r.Float64()*2*t.angle)
}

// Reports: the angle in radians, 0 when the rotation did not apply.
func (t *rotate) Reports() int { return 1 }

func (t *rotate) Report(c *Ctx, key int, dst []float32) {
	dst[0] = 0
	if apply, th := t.draw(c, key); apply {
		dst[0] = float32(th)
	}
}

func (t *rotate) Run(c *Ctx, op int, in, out []byte) error {
	apply, theta := t.draw(c, op)
	if !apply {
		copy(out, in)
		return nil
	}
	h, w, ch := t.spec.Shape[0], t.spec.Shape[1], t.spec.Shape[2]
	imgproc.Rotate(out, in, h, w, ch, theta*180/math.Pi, t.bilinear, t.fill)
	return nil
}

// fixedCrop is FFCV-SSL's CenterCrop and CornerCrop on decoded images: a
// square of side int(ratio·min(h, w)) at the centre or a corner, area-resized
// to size.
type fixedCrop struct {
	oh, ow int
	ratio  float64
	corner string
	in     Spec
}

func newFixedCrop(corner bool) Factory {
	return func(_ Env, raw json.RawMessage) (Op, error) {
		var a struct {
			Size   [2]int  `json:"size"`
			Ratio  float64 `json:"ratio"`
			Corner string  `json:"corner"`
		}
		if err := Parse(raw, &a); err != nil {
			return nil, err
		}
		if a.Size[0] < 1 || a.Size[1] < 1 {
			return nil, fmt.Errorf("output size %v must be positive", a.Size)
		}
		if !(a.Ratio > 0 && a.Ratio <= 1) {
			return nil, fmt.Errorf("ratio %v must be in (0, 1]", a.Ratio)
		}
		switch {
		case !corner && a.Corner != "":
			return nil, fmt.Errorf("a centre crop takes no corner")
		case corner:
			switch a.Corner {
			case "top_left", "top_right", "bottom_left", "bottom_right":
			default:
				return nil, fmt.Errorf("corner %q must be top_left, top_right, bottom_left or bottom_right", a.Corner)
			}
		}
		return &fixedCrop{oh: a.Size[0], ow: a.Size[1], ratio: a.Ratio, corner: a.Corner}, nil
	}
}

func (t *fixedCrop) Out(in Spec) (Spec, error) {
	t.in = in
	if err := NeedImage(in); err != nil {
		return in, err
	}
	return Spec{Shape: []int{t.oh, t.ow, in.Shape[2]}, DType: "|u1"}, nil
}

func (t *fixedCrop) rect(w, h int) image.Rectangle {
	side := max(1, int(t.ratio*float64(min(w, h))))
	top, left := (h-side)/2, (w-side)/2
	switch t.corner {
	case "top_left":
		top, left = 0, 0
	case "top_right":
		top, left = 0, w-side
	case "bottom_left":
		top, left = h-side, 0
	case "bottom_right":
		top, left = h-side, w-side
	}
	return image.Rect(left, top, left+side, top+side)
}

func (t *fixedCrop) Place(_ *Ctx, _, w, h int) (Step, error) {
	return CropStep(t.rect(w, h), t.ow, t.oh), nil
}

func (t *fixedCrop) Run(c *Ctx, _ int, in, out []byte) error {
	h, w, ch := t.in.Shape[0], t.in.Shape[1], t.in.Shape[2]
	crop := t.rect(w, h)
	src := imgproc.SubRect(in, w*ch, ch, crop)
	resizerOf(c).ResizeArea(out, t.ow, t.oh, src, crop.Dx(), crop.Dy(), w*ch, ch)
	return nil
}

// randomErasing is torchvision's RandomErasing: with probability p, a
// rectangle of area fraction U(scale) and log-uniform aspect ratio (10
// tries, none if all fail) is set to value.
type randomErasing struct {
	SameImage
	PhotometricOp
	p            float64
	scale, ratio [2]float64
	value        []byte
	spec         Spec
}

func newRandomErasing(_ Env, raw json.RawMessage) (Op, error) {
	var a struct {
		P     float64    `json:"p"`
		Scale [2]float64 `json:"scale"`
		Ratio [2]float64 `json:"ratio"`
		Value []float64  `json:"value"`
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	if !(a.P >= 0 && a.P <= 1) {
		return nil, fmt.Errorf("p %v must be in [0, 1]", a.P)
	}
	if !(a.Scale[0] >= 0 && a.Scale[0] <= a.Scale[1] && a.Scale[1] <= 1) {
		return nil, fmt.Errorf("scale %v must be (min, max) within [0, 1]", a.Scale)
	}
	if !(a.Ratio[0] > 0 && a.Ratio[0] <= a.Ratio[1]) {
		return nil, fmt.Errorf("ratio %v must be positive (min, max)", a.Ratio)
	}
	if len(a.Value) == 0 {
		return nil, fmt.Errorf("value needs one number or one per channel")
	}
	v := make([]byte, len(a.Value))
	for i, x := range a.Value {
		v[i] = byte(min(max(x, 0), 255)) // torch's uint8 cast of the value
	}
	return &randomErasing{p: a.P, scale: a.Scale, ratio: a.Ratio, value: v}, nil
}

func (t *randomErasing) Out(in Spec) (Spec, error) {
	t.spec = in
	if err := NeedImage(in); err != nil {
		return in, err
	}
	if len(t.value) != 1 && len(t.value) != in.Shape[2] {
		return in, fmt.Errorf("value has %d numbers for %d channels", len(t.value), in.Shape[2])
	}
	return in, nil
}

// drawErasing is RandomErasing's draw for an h×w image: the rectangle
// (top, left, height, width), ok false when nothing is erased.
func drawErasing(c *Ctx, op int, p float64, scale, ratio [2]float64, h, w int) (top, left, eh, ew int, ok bool) {
	r := c.Rand(op)
	if r.Float64() >= p {
		return 0, 0, 0, 0, false
	}
	area := float64(h * w)
	lo, hi := math.Log(ratio[0]), math.Log(ratio[1])
	for try := 0; try < 10; try++ {
		target := area * (scale[0] + float64(r.Float64()*(scale[1]-scale[0])))
		aspect := math.Exp(lo + float64(r.Float64()*(hi-lo)))
		eh = int(math.RoundToEven(math.Sqrt(target * aspect)))
		ew = int(math.RoundToEven(math.Sqrt(target / aspect)))
		if !(eh < h && ew < w) {
			continue
		}
		return r.IntN(h - eh + 1), r.IntN(w - ew + 1), eh, ew, true
	}
	return 0, 0, 0, 0, false
}

func (t *randomErasing) Run(c *Ctx, op int, in, out []byte) error {
	CopyIfNeeded(out, in)
	h, w, ch := t.spec.Shape[0], t.spec.Shape[1], t.spec.Shape[2]
	top, left, eh, ew, ok := drawErasing(c, op, t.p, t.scale, t.ratio, h, w)
	if !ok {
		return nil
	}
	for y := top; y < top+eh; y++ {
		row := out[(y*w+left)*ch : (y*w+left+ew)*ch]
		for i := range row {
			row[i] = t.value[(i%ch)%len(t.value)]
		}
	}
	return nil
}
