package transform

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// FFCV's MixUp on images and labels.

// mixupStream is the stream of BatchCtx.Rand the mixup ops draw from.
const mixupStream = 0x6d69787570

// lambdas draws the mixing weights of a batch. Image and label mixup with the
// same alpha and same_lambda draw the same values, so labels match images.
func lambdas(b *pipeline.BatchCtx, alpha float64, same bool, n int) []float64 {
	r := b.Rand(mixupStream)
	out := make([]float64, n)
	for i := range out {
		if i == 0 || !same {
			out[i] = pipeline.Beta(r, alpha)
		} else {
			out[i] = out[0]
		}
	}
	return out
}

type mixup struct {
	labels bool
	alpha  float64
	same   bool
	in     pipeline.Spec
}

func newMixup(labels bool) pipeline.BatchFactory {
	return func(raw json.RawMessage) (pipeline.BatchOp, error) {
		var a struct {
			Alpha float64 `json:"alpha"`
			Same  bool    `json:"same_lambda"`
		}
		if err := pipeline.Parse(raw, &a); err != nil {
			return nil, err
		}
		if a.Alpha <= 0 {
			return nil, fmt.Errorf("alpha %v must be positive", a.Alpha)
		}
		return &mixup{labels: labels, alpha: a.Alpha, same: a.Same}, nil
	}
}

func (m *mixup) Out(in pipeline.Spec) (pipeline.Spec, error) {
	m.in = in
	if m.labels {
		if in.DType != "<i8" || in.Bytes() != 8 {
			return in, fmt.Errorf("needs int64 (1,) labels, got %v %s", in.Shape, field.DTypeName(in.DType))
		}
		return pipeline.Spec{Shape: []int{3}, DType: "<f4"}, nil
	}
	return in, pipeline.NeedImage(in)
}

// RunBatch mixes sample i with sample i-1 (sample 0 with the last): images
// become λ·x_i + (1-λ)·x_{i-1} (truncated to uint8), labels [y_i, y_{i-1}, λ].
func (m *mixup) RunBatch(b *pipeline.BatchCtx, in, out []byte, n int) error {
	lam := lambdas(b, m.alpha, m.same, n)
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
