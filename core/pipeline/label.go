package pipeline

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// Label ops (FFCV-SSL's Label*): an op in another pipeline (the label's)
// that reports what an image op drew for the sample. It builds the image
// op from the image op's own spec and calls its Report under the key both
// get from the shared "seed", so the parameters are the image op's by
// construction.

// Reporter is an op whose draws a Label op can report.
type Reporter interface {
	Op
	// Reports is the number of parameters Report writes.
	Reports() int
	// Report writes the parameters the op draws for the sample in c under
	// key: what its Run does to the sample.
	Report(c *Ctx, key int, dst []float32)
}

func init() { Register("label", newLabel) }

// maxReports bounds Reporter.Reports.
const maxReports = 8

// label outputs its pipeline's values (a scalar or vector, as float32)
// followed by the parameters of. Workers share it: Run keeps its
// parameters on the stack.
type label struct {
	of Reporter
	in Spec
}

func newLabel(env Env, raw json.RawMessage) (Op, error) {
	var a struct {
		Of json.RawMessage `json:"of"`
	}
	if err := Parse(raw, &a); err != nil {
		return nil, err
	}
	if err := NeedSeed(raw); err != nil {
		return nil, err
	}
	head, err := ParseHead(a.Of)
	if err != nil || head.Op == "" {
		return nil, fmt.Errorf("of: the image operation's spec: %v", err)
	}
	mk, ok := registry[head.Op]
	if !ok {
		return nil, fmt.Errorf("of: unknown operation %q", head.Op)
	}
	op, err := mk(env, a.Of)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", head.Name(), err)
	}
	r, ok := op.(Reporter)
	if !ok || r.Reports() > maxReports {
		return nil, fmt.Errorf("%s has no parameters to report", head.Name())
	}
	return &label{of: r}, nil
}

func (l *label) Out(in Spec) (Spec, error) {
	l.in = in
	switch in.DType {
	case "<i8", "<i4", "<f4", "<f8", "|u1":
	default:
		return in, fmt.Errorf("needs numeric values (int64, int32, float32, float64, uint8), got %s", field.DTypeName(in.DType))
	}
	if len(in.Shape) > 1 {
		return in, fmt.Errorf("needs a scalar or a vector, got shape %v", in.Shape)
	}
	n := 1
	for _, d := range in.Shape {
		n *= d
	}
	return Spec{Shape: []int{n + l.of.Reports()}, DType: "<f4"}, nil
}

func (l *label) Run(c *Ctx, key int, in, out []byte) error {
	n := 0
	for len(in) > 0 {
		var v float32
		switch l.in.DType {
		case "<i8":
			v, in = float32(int64(binary.LittleEndian.Uint64(in))), in[8:]
		case "<i4":
			v, in = float32(int32(binary.LittleEndian.Uint32(in))), in[4:]
		case "<f4":
			v, in = math.Float32frombits(binary.LittleEndian.Uint32(in)), in[4:]
		case "<f8":
			v, in = float32(math.Float64frombits(binary.LittleEndian.Uint64(in))), in[8:]
		default:
			v, in = float32(in[0]), in[1:]
		}
		binary.LittleEndian.PutUint32(out[4*n:], math.Float32bits(v))
		n++
	}
	var buf [maxReports]float32
	params := buf[:l.of.Reports()]
	l.of.Report(c, key, params)
	for i, v := range params {
		binary.LittleEndian.PutUint32(out[4*(n+i):], math.Float32bits(v))
	}
	return nil
}
