package transform

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// FFCV's data poisoning: labels replaced, images blended with a mask, for
// the listed samples.

// replaceLabel sets an int64 label to newLabel for the listed sample ids.
type replaceLabel struct {
	ids   map[uint64]bool
	label int64
}

func newReplaceLabel(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		Indices []uint64 `json:"indices"`
		Label   int64    `json:"label"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	r := &replaceLabel{ids: map[uint64]bool{}, label: a.Label}
	for _, i := range a.Indices {
		r.ids[i] = true
	}
	return r, nil
}

func (r *replaceLabel) Out(in pipeline.Spec) (pipeline.Spec, error) {
	if in.DType != "<i8" || len(in.Shape) != 1 || in.Shape[0] != 1 {
		return in, fmt.Errorf("needs int64 (1,) labels, got %v %s", in.Shape, field.DTypeName(in.DType))
	}
	return in, nil
}
func (r *replaceLabel) InPlace() bool { return true }

func (r *replaceLabel) Run(c *pipeline.Ctx, _ int, in, out []byte) error {
	pipeline.CopyIfNeeded(out, in)
	if r.ids[c.Sample] {
		binary.LittleEndian.PutUint64(out, uint64(r.label))
	}
	return nil
}

// poison blends the listed samples with a mask: clip((1-alpha)·x + alpha·mask),
// alpha one value, or one per pixel (FFCV's H×W alpha array, alphaMap).
type poison struct {
	pipeline.SameImage
	pipeline.PhotometricOp
	mask     []float32
	alpha    float32
	alphaMap []float32
	ids      map[uint64]bool
	lo, hi   float32
	spec     pipeline.Spec
}

func newPoison(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		Mask    []float32  `json:"mask"`
		Shape   []int      `json:"mask_shape"`
		Alpha   float32    `json:"alpha"`
		Map     []float32  `json:"alpha_map"`
		Indices []uint64   `json:"indices"`
		Clamp   [2]float32 `json:"clamp"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if !(a.Alpha >= 0 && a.Alpha <= 1) {
		return nil, fmt.Errorf("alpha %v must be in [0, 1]", a.Alpha)
	}
	for _, v := range a.Map {
		if !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("alpha has %v: its values must be in [0, 1]", v)
		}
	}
	if !(a.Clamp[0] <= a.Clamp[1]) {
		return nil, fmt.Errorf("clamp %v must be (min, max)", a.Clamp)
	}
	p := &poison{mask: a.Mask, alpha: a.Alpha, alphaMap: a.Map, ids: map[uint64]bool{}, lo: a.Clamp[0], hi: a.Clamp[1]}
	for _, i := range a.Indices {
		p.ids[i] = true
	}
	return p, nil
}

func (p *poison) Out(in pipeline.Spec) (pipeline.Spec, error) {
	if err := pipeline.NeedImage(in); err != nil {
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

func (p *poison) Run(c *pipeline.Ctx, _ int, in, out []byte) error {
	pipeline.CopyIfNeeded(out, in)
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
