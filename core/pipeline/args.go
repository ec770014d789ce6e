package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// Helpers the op families share to read their arguments and check their
// input.

// Parse decodes an operation's arguments into v, rejecting keys v does not
// declare: a misspelt argument ("prob" for "p") must not silently fall back
// to its zero value. The head's keys ("op", "key", "seed", "class") are Build's.
func Parse(raw json.RawMessage, v any) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	delete(m, "op")
	delete(m, "key")   // the randomness key, read by Build
	delete(m, "seed")  // a randomness key shared across pipelines, read by Build
	delete(m, "class") // the user's name of the operation, for messages
	args, _ := json.Marshal(m)
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	return nil
}

// Prob checks that the probability p, the argument name, lies in [0, 1].
func Prob(name string, p float64) error {
	if !(p >= 0 && p <= 1) {
		return fmt.Errorf("%s %v must be in [0, 1]", name, p)
	}
	return nil
}

// Bytes checks that the values of the argument name (a fill colour) lie
// in [0, 255], and returns them as bytes.
func Bytes(name string, v []int) ([]byte, error) {
	for _, x := range v {
		if x < 0 || x > 255 {
			return nil, fmt.Errorf("%s %v must have values in [0, 255]", name, v)
		}
	}
	return FillBytes(v), nil
}

// MaxSide bounds the height and width of an operation's output (a JPEG's
// own limit).
const MaxSide = 65535

// Size checks the output size (height, width), the argument name.
func Size(name string, hw [2]int) error {
	if hw[0] < 1 || hw[1] < 1 || hw[0] > MaxSide || hw[1] > MaxSide {
		return fmt.Errorf("%s %v must be (height, width) in [1, %d]", name, hw, MaxSide)
	}
	return nil
}

// NoArgs is what operations without arguments parse, so extra keys are errors.
type NoArgs struct{}

// ErrNoFile is what NeedFile returns to a factory built without a file
// (Check): its arguments are checked by then, and the rest of its checks
// need the field.
var ErrNoFile = errors.New("operation built without a file")

// NeedFile returns ErrNoFile when env has no file. A factory calls it, or
// NeedType, after checking its arguments and before it reads env.
func NeedFile(env Env) error {
	if env.Reader == nil {
		return ErrNoFile
	}
	return nil
}

// NeedType checks that a decoder's field is of one of types (ErrNoFile
// without a file).
func NeedType(env Env, types ...field.Type) error {
	if err := NeedFile(env); err != nil {
		return err
	}
	for _, t := range types {
		if env.Desc.Type == t {
			return nil
		}
	}
	return fmt.Errorf("cannot decode a %v", env.Desc.Type)
}

// NeedSeed rejects a Label op without "seed": its position in another
// pipeline is no key to pair it with anything.
func NeedSeed(raw json.RawMessage) error {
	if h, err := ParseHead(raw); err != nil || h.Seed == nil {
		return fmt.Errorf("seed is missing: it must be the seed of the image operation it reports on")
	}
	return nil
}

// NeedImage checks that in is uint8 (H, W, C) images.
func NeedImage(in Spec) error {
	if len(in.Shape) != 3 || in.DType != "|u1" {
		return fmt.Errorf("needs uint8 (H, W, C) images, got %v %s", in.Shape, field.DTypeName(in.DType))
	}
	return nil
}

// SameImage is Out and InPlace for transforms that keep the image's shape
// and may run in place.
type SameImage struct{}

func (SameImage) Out(in Spec) (Spec, error) { return in, NeedImage(in) }
func (SameImage) InPlace() bool             { return true }

// CopyIfNeeded copies in to out unless they are the same buffer (an op run
// in place).
func CopyIfNeeded(out, in []byte) {
	if len(in) > 0 && len(out) > 0 && &in[0] != &out[0] {
		copy(out, in)
	}
}

// Grow returns b[:n], reallocating only when b is too short.
func Grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// FillBytes is a fill colour's values as bytes, clamped to [0, 255].
func FillBytes(v []int) []byte {
	out := make([]byte, len(v))
	for i, x := range v {
		out[i] = byte(min(max(x, 0), 255))
	}
	return out
}

// ParseInterp reads an interpolation name.
func ParseInterp(s string) (bilinear bool, err error) {
	switch s {
	case "", "nearest":
		return false, nil
	case "bilinear":
		return true, nil
	}
	return false, fmt.Errorf("interpolation %q must be nearest or bilinear", s)
}

// CheckFill checks a fill colour (nil: none) against the channel count.
func CheckFill(fill []float32, ch int) error {
	if fill != nil && len(fill) != 1 && len(fill) != ch {
		return fmt.Errorf("fill has %d values for %d channels", len(fill), ch)
	}
	return nil
}
