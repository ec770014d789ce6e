package transform

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// normalize maps uint8 (H, W, C) to (x - mean[c]) / std[c] as float32 or
// float16. Like FFCV's lookup table, each of the 256 values per channel is
// computed in float64 and rounded once to the output type.
type normalize struct {
	pipeline.PhotometricOp
	ch   int
	half bool
	f32  [][256]uint32 // [c][x]: float32 bits of channel c's value for x
	f16  [][256]uint16 // [c][x]: float16 bits
}

func newNormalize(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	// float64, as the caller gave them: FFCV computes its table from the
	// user's values, and rounding them to float32 first changes it.
	var a struct {
		Mean  []float64 `json:"mean"`
		Std   []float64 `json:"std"`
		DType string    `json:"dtype"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if len(a.Mean) != len(a.Std) || len(a.Mean) == 0 {
		return nil, fmt.Errorf("mean and std need one value per channel")
	}
	for i, s := range a.Std {
		if s == 0 || math.IsNaN(s) || math.IsInf(s, 0) || math.IsNaN(a.Mean[i]) || math.IsInf(a.Mean[i], 0) {
			return nil, fmt.Errorf("mean %v and std %v must be finite, std without zeros", a.Mean, a.Std)
		}
	}
	switch a.DType {
	case "<f4", "<f2":
	default:
		return nil, fmt.Errorf("type %s must be float16 or float32", field.DTypeName(a.DType))
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
	op, err := newNormalize(pipeline.Env{}, raw)
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

func (n *normalize) Out(in pipeline.Spec) (pipeline.Spec, error) {
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	if in.Shape[2] != n.ch {
		return in, fmt.Errorf("mean has %d values for %d channels", n.ch, in.Shape[2])
	}
	dt := "<f4"
	if n.half {
		dt = "<f2"
	}
	return pipeline.Spec{Shape: in.Shape, DType: dt}, nil
}

func (n *normalize) Run(_ *pipeline.Ctx, _ int, in, out []byte) error {
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
