package pipeline

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
)

// Batch-level operations: they need the whole batch (sample i is mixed with
// sample i-1), so they run once per batch after every sample is decoded.

// BatchOp is an operation on a whole batch of n samples.
type BatchOp interface {
	Out(in Spec) (Spec, error)
	RunBatch(b *BatchCtx, in, out []byte, n int) error
}

// BatchCtx identifies a batch for its randomness.
type BatchCtx struct {
	Seed, Epoch uint64
	Index       uint64 // batch index in the epoch
}

func init() {
	registerBatch("image_mixup", newMixup(false))
	registerBatch("label_mixup", newMixup(true))
}

var batchRegistry = map[string]func(json.RawMessage) (BatchOp, error){}

func registerBatch(name string, f func(json.RawMessage) (BatchOp, error)) { batchRegistry[name] = f }

// lambdas draws the mixing weights of a batch. Image and label mixup with the
// same alpha and same_lambda draw the same values, so labels match images.
func (b *BatchCtx) lambdas(alpha float64, same bool, n int) []float64 {
	r := rand.New(rand.NewPCG(mix(b.Seed, b.Epoch), mix(b.Index, 0x6d69787570)))
	out := make([]float64, n)
	for i := range out {
		if i == 0 || !same {
			out[i] = beta(r, alpha)
		} else {
			out[i] = out[0]
		}
	}
	return out
}

// beta samples Beta(a, a) as X/(X+Y) with X, Y ~ Gamma(a).
func beta(r *rand.Rand, a float64) float64 {
	x, y := gamma(r, a), gamma(r, a)
	if x+y == 0 {
		return 0.5
	}
	return x / (x + y)
}

// gamma samples Gamma(a, 1) by Marsaglia and Tsang's method.
func gamma(r *rand.Rand, a float64) float64 {
	if a < 1 {
		return gamma(r, a+1) * math.Pow(r.Float64(), 1/a)
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + float64(c*x)
		if v <= 0 {
			continue
		}
		v = float64(v * v * v)
		u := r.Float64()
		if u < 1-float64(0.0331*x*x*x*x) || math.Log(u) < float64(0.5*x*x)+float64(d*(1-v+math.Log(v))) {
			return d * v
		}
	}
}

type mixup struct {
	labels bool
	alpha  float64
	same   bool
	in     Spec
}

func newMixup(labels bool) func(json.RawMessage) (BatchOp, error) {
	return func(raw json.RawMessage) (BatchOp, error) {
		var a struct {
			Alpha float64 `json:"alpha"`
			Same  bool    `json:"same_lambda"`
		}
		if err := parse(raw, &a); err != nil {
			return nil, err
		}
		if a.Alpha <= 0 {
			return nil, fmt.Errorf("alpha %v must be positive", a.Alpha)
		}
		return &mixup{labels: labels, alpha: a.Alpha, same: a.Same}, nil
	}
}

func (m *mixup) Out(in Spec) (Spec, error) {
	m.in = in
	if m.labels {
		if in.DType != "<i8" || in.Bytes() != 8 {
			return in, fmt.Errorf("label mixup needs int64 (1,) labels, got %v %s", in.Shape, in.DType)
		}
		return Spec{Shape: []int{3}, DType: "<f4"}, nil
	}
	return in, needImage(in)
}

// RunBatch mixes sample i with sample i-1 (sample 0 with the last): images
// become λ·x_i + (1-λ)·x_{i-1} (truncated to uint8), labels [y_i, y_{i-1}, λ].
func (m *mixup) RunBatch(b *BatchCtx, in, out []byte, n int) error {
	lam := b.lambdas(m.alpha, m.same, n)
	if m.labels {
		for i := 0; i < n; i++ {
			j := (i + n - 1) % n
			y, yp := int64(binary.LittleEndian.Uint64(in[8*i:])), int64(binary.LittleEndian.Uint64(in[8*j:]))
			o := out[12*i:]
			binary.LittleEndian.PutUint32(o, math.Float32bits(float32(y)))
			binary.LittleEndian.PutUint32(o[4:], math.Float32bits(float32(yp)))
			binary.LittleEndian.PutUint32(o[8:], math.Float32bits(float32(lam[i])))
		}
		return nil
	}
	sz := m.in.Bytes()
	for i := 0; i < n; i++ {
		j := (i + n - 1) % n
		a, p, o := in[i*sz:(i+1)*sz], in[j*sz:(j+1)*sz], out[i*sz:(i+1)*sz]
		l := lam[i]
		for k := range o {
			o[k] = clipU8(float64(l*float64(a[k])) + float64((1-l)*float64(p[k])))
		}
	}
	return nil
}
