package ssl

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// randomErasing is torchvision's RandomErasing: with probability p, a
// rectangle of area fraction U(scale) and log-uniform aspect ratio (10
// tries, none if all fail) is set to value.
type randomErasing struct {
	pipeline.SameImage
	pipeline.PhotometricOp
	p            float64
	scale, ratio [2]float64
	value        []byte
	spec         pipeline.Spec
}

func newRandomErasing(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		P     float64    `json:"p"`
		Scale [2]float64 `json:"scale"`
		Ratio [2]float64 `json:"ratio"`
		Value []float64  `json:"value"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if err := pipeline.Prob("erase_prob", a.P); err != nil {
		return nil, err
	}
	if !(a.Scale[0] >= 0 && a.Scale[0] <= a.Scale[1] && a.Scale[1] <= 1) {
		return nil, fmt.Errorf("scale %v must be (min, max) within [0, 1]", a.Scale)
	}
	if !(a.Ratio[0] > 0 && a.Ratio[0] <= a.Ratio[1]) {
		return nil, fmt.Errorf("ratio %v must be positive (min, max)", a.Ratio)
	}
	// value is Python's mean: the fill, one number or one per channel.
	if len(a.Value) == 0 {
		return nil, fmt.Errorf("mean needs one number or one per channel")
	}
	v := make([]byte, len(a.Value))
	for i, x := range a.Value {
		if !(x >= 0 && x <= 255) {
			return nil, fmt.Errorf("mean %v must have values in [0, 255]", a.Value)
		}
		v[i] = byte(x) // torch's uint8 cast of the value
	}
	return &randomErasing{p: a.P, scale: a.Scale, ratio: a.Ratio, value: v}, nil
}

func (t *randomErasing) Out(in pipeline.Spec) (pipeline.Spec, error) {
	t.spec = in
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	if len(t.value) != 1 && len(t.value) != in.Shape[2] {
		return in, fmt.Errorf("mean has %d numbers for %d channels", len(t.value), in.Shape[2])
	}
	return in, nil
}

// drawErasing is RandomErasing's draw for an h×w image: the rectangle
// (top, left, height, width), ok false when nothing is erased.
func drawErasing(c *pipeline.Ctx, op int, p float64, scale, ratio [2]float64, h, w int) (top, left, eh, ew int, ok bool) {
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

func (t *randomErasing) Run(c *pipeline.Ctx, op int, in, out []byte) error {
	pipeline.CopyIfNeeded(out, in)
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
