package field

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Value is one field of one sample as handed to the writer.
type Value struct {
	Int   int64
	Float float64
	// Data is the payload: bytes, serialized JSON (without the NUL), array
	// bytes in C order, or image pixels / an encoded image file.
	Data []byte
	// Image geometry for raw pixel input (HWC, Channels 1, 3 or 4).
	Width, Height, Channels int
	// Encoded marks Data as an image file (JPEG, PNG, ...) rather than pixels.
	Encoded bool
	// Path names an image file the encoder reads itself (in its worker).
	Path string
	// Column is a custom field's metadata column, encoded by its Python
	// encode(); Data is then its heap bytes, whose file offset goes at
	// PtrOffset in Column (no heap bytes when PtrOffset < 0).
	Column    []byte
	PtrOffset int
	// Texts are a TextField's captions (UTF-8) and Tokens, for a field that
	// stores them, each caption's token ids.
	Texts  [][]byte
	Tokens [][]uint32
}

// Encoded is one field's contribution to a sample: its metadata column with
// the heap pointer left zero, and the heap bytes (if HasHeap) whose absolute
// file offset the writer stores at PtrOffset in the column.
type Encoded struct {
	Column    []byte
	Heap      []byte
	HasHeap   bool
	PtrOffset int
	// Image is an RGBImage's source and stored sizes, for the fields that
	// follow it (Follower).
	Image ImageGeometry
}

// Encoder turns values of one field into Encoded form. Encode must be safe for
// concurrent use; sample is the sample's index, for per-sample randomness.
type Encoder interface {
	Encode(v Value, sample uint64) (Encoded, error)
}

// NewEncoder returns the encoder for a built-in field other than RGBImage,
// whose encoder (image decoding, resizing, JPEG) is imageenc.NewEncoder.
func NewEncoder(d Desc) (Encoder, error) {
	switch d.Type {
	case Int, Float:
		return scalarEncoder{d.Type}, nil
	case Bytes, JSON:
		return bytesEncoder{json: d.Type == JSON}, nil
	case NDArray, TorchTensor:
		n, err := d.ArrayBytes()
		if err != nil {
			return nil, err
		}
		return arrayEncoder{name: d.Name, size: n}, nil
	case Ragged, Mask:
		return NewTargetEncoder(d)
	case Text:
		return NewTextEncoder(d)
	case RGBImage:
		return nil, fmt.Errorf("field %q: RGBImage fields are encoded by package imageenc", d.Name)
	}
	return nil, fmt.Errorf("field %q: cannot write fields of type %v", d.Name, d.Type)
}

// NewCustomEncoder returns the encoder of a custom field whose values come
// encoded already (Value.Column, Value.Data, Value.PtrOffset) into col.
func NewCustomEncoder(name string, col Column) Encoder {
	return customEncoder{name: name, size: col.Size}
}

type customEncoder struct {
	name string
	size int
}

func (e customEncoder) Encode(v Value, _ uint64) (Encoded, error) {
	if len(v.Column) != e.size {
		return Encoded{}, fmt.Errorf("%w: field %q: metadata column has %d bytes, the field's metadata type %d",
			ErrData, e.name, len(v.Column), e.size)
	}
	if v.PtrOffset < 0 {
		return Encoded{Column: v.Column}, nil
	}
	if v.PtrOffset+8 > e.size {
		return Encoded{}, fmt.Errorf("%w: field %q: heap pointer at byte %d of a %d-byte metadata column",
			ErrData, e.name, v.PtrOffset, e.size)
	}
	return Encoded{Column: v.Column, Heap: v.Data, HasHeap: true, PtrOffset: v.PtrOffset}, nil
}

// NewIntEncoder returns the IntField encoder.
func NewIntEncoder() Encoder { return scalarEncoder{Int} }

type scalarEncoder struct{ t Type }

func (e scalarEncoder) Encode(v Value, _ uint64) (Encoded, error) {
	col := make([]byte, 8)
	if e.t == Int {
		binary.LittleEndian.PutUint64(col, uint64(v.Int))
	} else {
		binary.LittleEndian.PutUint64(col, math.Float64bits(v.Float))
	}
	return Encoded{Column: col}, nil
}

type bytesEncoder struct{ json bool }

func (e bytesEncoder) Encode(v Value, _ uint64) (Encoded, error) {
	heap := v.Data
	if e.json {
		// FFCV stores json.dumps(value) followed by a NUL terminator.
		heap = make([]byte, len(v.Data)+1)
		copy(heap, v.Data)
	}
	col := make([]byte, 16)
	binary.LittleEndian.PutUint64(col[8:], uint64(len(heap)))
	return Encoded{Column: col, Heap: heap, HasHeap: true, PtrOffset: 0}, nil
}

type arrayEncoder struct {
	name string
	size uint64
}

func (e arrayEncoder) Encode(v Value, _ uint64) (Encoded, error) {
	if uint64(len(v.Data)) != e.size {
		return Encoded{}, fmt.Errorf("%w: field %q: array has %d bytes, the field's shape and dtype need %d", ErrData, e.name, len(v.Data), e.size)
	}
	return Encoded{Column: make([]byte, 8), Heap: v.Data, HasHeap: true}, nil
}

// ErrData is wrapped by errors about a sample's content (wrong size, bad image).
var ErrData = errors.New("bad sample data")
