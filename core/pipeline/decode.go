package pipeline

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/field"
)

func init() {
	RegisterDecoder("int", scalarDecoder(field.Int, "<i8"))
	RegisterDecoder("float", scalarDecoder(field.Float, "<f8"))
	RegisterDecoder("ndarray", newArrayDecoder)
	RegisterDecoder("bytes", newBytesDecoder)
}

// scalarDecoder copies the 8-byte column: Int → int64 (1,), Float → float64 (1,).
func scalarDecoder(t field.Type, dtype string) Factory {
	return func(env Env, raw json.RawMessage) (Op, error) {
		if err := Parse(raw, &NoArgs{}); err != nil {
			return nil, err
		}
		if err := NeedType(env, t); err != nil {
			return nil, err
		}
		return copyDecoder{Spec{Shape: []int{1}, DType: dtype}, false}, nil
	}
}

type copyDecoder struct {
	spec Spec
	heap bool
}

func (d copyDecoder) Out(Spec) (Spec, error) { return d.spec, nil }

func (d copyDecoder) Run(c *Ctx, _ int, _, out []byte) error {
	src := c.Col
	if d.heap {
		src = c.Heap
	}
	if len(src) != len(out) {
		return fmt.Errorf("%w: stored %d bytes, expected %d", field.ErrData, len(src), len(out))
	}
	copy(out, src)
	return nil
}

func newArrayDecoder(env Env, raw json.RawMessage) (Op, error) {
	if err := Parse(raw, &NoArgs{}); err != nil {
		return nil, err
	}
	if err := NeedType(env, field.NDArray, field.TorchTensor); err != nil {
		return nil, err
	}
	n, err := env.Desc.ArrayBytes()
	if err != nil {
		return nil, err
	}
	if ps := env.Reader.PageSize(); n > ps {
		return nil, fmt.Errorf("%w: arrays of shape %v and dtype %s take %d bytes, more than a %d-byte page can hold (corrupt descriptor?)",
			field.ErrData, env.Desc.Shape, env.Desc.DType, n, ps)
	}
	shape := make([]int, len(env.Desc.Shape))
	for i, d := range env.Desc.Shape {
		shape[i] = int(d)
	}
	dtype := env.Desc.DType
	switch dtype[0] {
	case '>':
		return nil, fmt.Errorf("big-endian dtype %q cannot be handed to torch", dtype)
	case '<', '|':
	default:
		dtype = "<" + dtype
	}
	return copyDecoder{Spec{Shape: shape, DType: dtype}, true}, nil
}

// bytesDecoder pads each sample to the longest in the file with zeros.
type bytesDecoder struct{ max int }

func newBytesDecoder(env Env, raw json.RawMessage) (Op, error) {
	if err := Parse(raw, &NoArgs{}); err != nil {
		return nil, err
	}
	if err := NeedType(env, field.Bytes, field.JSON); err != nil {
		return nil, err
	}
	longest := uint64(0)
	for i := uint64(0); i < env.Reader.NumSamples(); i++ {
		col, err := env.Reader.Column(i, env.Field)
		if err != nil {
			return nil, err
		}
		// A sample whose bytes do not lie in the heap fails when it is read;
		// its (corrupt) length must not size every sample's output.
		if _, _, _, ok, err := env.Reader.Locate(i, env.Field); err == nil && ok {
			longest = max(longest, binary.LittleEndian.Uint64(col[8:]))
		}
	}
	if longest > 1<<31 {
		return nil, fmt.Errorf("longest sample of %d bytes is implausible (corrupt file?)", longest)
	}
	return bytesDecoder{int(longest)}, nil
}

func (d bytesDecoder) Out(Spec) (Spec, error) { return Spec{Shape: []int{d.max}, DType: "|u1"}, nil }

func (d bytesDecoder) Run(c *Ctx, _ int, _, out []byte) error {
	n := copy(out, c.Heap)
	clear(out[n:])
	return nil
}
