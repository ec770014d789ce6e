// Package field describes the kinds of field a .beton file can hold: their
// on-disk descriptors, the metadata column each contributes to a sample's row,
// and how a sample's value is encoded into that column and the heap.
package field

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
)

// Type is a field descriptor's type_id.
type Type uint8

// The type ids FFCV 1.0 assigns (ffcv/types.py order).
const (
	Float       Type = 0
	Int         Type = 1
	RGBImage    Type = 2
	Bytes       Type = 3
	NDArray     Type = 4
	JSON        Type = 5
	TorchTensor Type = 6
	Custom      Type = 255
)

func (t Type) String() string {
	switch t {
	case Float:
		return "FloatField"
	case Int:
		return "IntField"
	case RGBImage:
		return "RGBImageField"
	case Bytes:
		return "BytesField"
	case NDArray:
		return "NDArrayField"
	case JSON:
		return "JSONField"
	case TorchTensor:
		return "TorchTensorField"
	case Custom:
		return "custom"
	case Ragged:
		return "RaggedArrayField"
	case Mask:
		return "MaskField"
	case Text:
		return "TextField"
	case Video:
		return "VideoField"
	case Audio:
		return "AudioField"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Known reports whether t is a type id this package understands.
func (t Type) Known() bool {
	return t <= TorchTensor || t == Custom || t.Targets() || t == Text || t == Video || t == Audio
}

// Descriptor sizes fixed by the format.
const (
	DescriptorSize = 1041
	NameSize       = 16
	ArgsSize       = 1024
	maxDims        = 32
	typeLenOffset  = 8 * maxDims
	dtypeOffset    = typeLenOffset + 8
)

// Desc is one field descriptor.
type Desc struct {
	Type Type
	Name string
	// Shape and DType are set for NDArray and TorchTensor: DType is a numpy
	// type string such as "<f4" (the single entry of dtype.descr).
	Shape []uint64
	DType string
	// Args holds the raw argument bytes of a custom or target field.
	Args []byte
	// Target holds a Ragged or Mask field's arguments (Shape is then the
	// row shape of a Ragged field).
	Target *TargetArgs
	// Text holds a Text field's arguments.
	Text *TextArgs
	// Audio holds an Audio field's arguments.
	Audio *AudioArgs
}

// Arrays reports whether the field stores fixed-shape arrays.
func (d *Desc) Arrays() bool { return d.Type == NDArray || d.Type == TorchTensor }

// ItemSize is the byte size of one element of an array field's dtype.
func (d *Desc) ItemSize() (int, error) {
	m := dtypePattern.FindStringSubmatch(d.DType)
	if m == nil {
		return 0, fmt.Errorf("field %q: unsupported dtype %q (want a numpy type string such as '<f4')", d.Name, d.DType)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n <= 0 || n > 1<<20 {
		return 0, fmt.Errorf("field %q: unsupported dtype %q", d.Name, d.DType)
	}
	return n, nil
}

// DTypeName is a numpy type string as users write the type: "|u1" is
// uint8, "<f2" float16; one it does not know comes back as it is.
func DTypeName(s string) string {
	m := dtypeParts.FindStringSubmatch(s)
	if m == nil {
		return s
	}
	n, _ := strconv.Atoi(m[3])
	name := map[string]string{"b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex",
		"S": "bytes", "V": "void", "?": "bool"}[m[2]]
	switch m[2] {
	case "b", "?":
		if n != 1 {
			return s
		}
	case "S", "V":
		name += strconv.Itoa(n)
	default:
		name += strconv.Itoa(8 * n)
	}
	if m[1] == ">" && n > 1 {
		name += " (big-endian)"
	}
	return name
}

var dtypeParts = regexp.MustCompile(`^([<>|=]?)([biufcSV?])([0-9]+)$`)

// dtypePattern matches the numpy type strings an array field may hold:
// booleans, integers, floats, complex numbers and fixed-size void/bytes.
var dtypePattern = regexp.MustCompile(`^[<>|=]?[biufcSV?]([0-9]+)$`)

// ArrayBytes is the size of one sample of an array field.
func (d *Desc) ArrayBytes() (uint64, error) {
	n, err := d.ItemSize()
	if err != nil {
		return 0, err
	}
	total := uint64(n)
	for _, x := range d.Shape {
		if x != 0 && total > (1<<62)/x {
			return 0, fmt.Errorf("field %q: shape %v too large", d.Name, d.Shape)
		}
		total *= x
	}
	return total, nil
}

// MarshalBinary encodes the 1041-byte descriptor.
func (d *Desc) MarshalBinary() ([]byte, error) {
	if len(d.Name) > NameSize {
		return nil, fmt.Errorf("field name %q is longer than %d bytes", d.Name, NameSize)
	}
	for i := 0; i < len(d.Name); i++ {
		if d.Name[i] == 0 || d.Name[i] >= 0x80 {
			return nil, fmt.Errorf("field name %q must be ASCII without NUL", d.Name)
		}
	}
	b := make([]byte, DescriptorSize)
	b[0] = byte(d.Type)
	copy(b[1:1+NameSize], d.Name)
	args := b[1+NameSize:]
	switch {
	case d.Arrays():
		if len(d.Shape) > maxDims {
			return nil, fmt.Errorf("field %q: %d dimensions, at most %d", d.Name, len(d.Shape), maxDims)
		}
		if len(d.Shape) == 0 {
			// FFCV 1.0 can neither write nor read 0-d array fields.
			return nil, fmt.Errorf("field %q: a 0-d shape is not storable (FFCV 1.0 cannot read it): use shape (1,)", d.Name)
		}
		for i, x := range d.Shape {
			if x == 0 {
				return nil, fmt.Errorf("field %q: zero-length dimension in shape %v is not storable", d.Name, d.Shape)
			}
			binary.LittleEndian.PutUint64(args[8*i:], x)
		}
		if _, err := d.ItemSize(); err != nil {
			return nil, err
		}
		// json.dumps(dtype.descr) with Python's default separators.
		descr := []byte(`[["", "` + d.DType + `"]]`)
		if dtypeOffset+len(descr) > ArgsSize {
			return nil, fmt.Errorf("field %q: dtype description too long", d.Name)
		}
		binary.LittleEndian.PutUint64(args[typeLenOffset:], uint64(len(descr)))
		copy(args[dtypeOffset:], descr)
	case d.Type.Targets():
		if err := d.marshalTarget(args); err != nil {
			return nil, err
		}
	case d.Type == Text:
		if err := d.marshalText(args); err != nil {
			return nil, err
		}
	case d.Type == Video:
		if err := marshalVideo(args); err != nil {
			return nil, err
		}
	case d.Type == Audio:
		var a AudioArgs
		if d.Audio != nil {
			a = *d.Audio
		}
		if err := marshalAudio(args, a); err != nil {
			return nil, fmt.Errorf("field %q: %w", d.Name, err)
		}
	case d.Type == Custom:
		if len(d.Args) > ArgsSize {
			return nil, fmt.Errorf("field %q: %d argument bytes, at most %d", d.Name, len(d.Args), ArgsSize)
		}
		copy(args, d.Args)
	case !d.Type.Known():
		return nil, fmt.Errorf("field %q: unknown type id %d", d.Name, d.Type)
	}
	return b, nil
}

// ParseDesc decodes a 1041-byte descriptor.
func ParseDesc(b []byte) (Desc, error) {
	if len(b) != DescriptorSize {
		return Desc{}, fmt.Errorf("descriptor is %d bytes, want %d", len(b), DescriptorSize)
	}
	d := Desc{Type: Type(b[0])}
	name := b[1 : 1+NameSize]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	d.Name = string(name)
	if !d.Type.Known() {
		return d, fmt.Errorf("field %q: unknown type id %d", d.Name, b[0])
	}
	args := b[1+NameSize:]
	switch {
	case d.Arrays():
		for i := 0; i < maxDims; i++ {
			x := binary.LittleEndian.Uint64(args[8*i:])
			if x == 0 {
				break
			}
			d.Shape = append(d.Shape, x)
		}
		n := binary.LittleEndian.Uint64(args[typeLenOffset:])
		if n == 0 || n > ArgsSize-dtypeOffset {
			return d, fmt.Errorf("field %q: dtype length %d out of range", d.Name, n)
		}
		var descr [][]string
		if err := json.Unmarshal(args[dtypeOffset:dtypeOffset+int(n)], &descr); err != nil {
			return d, fmt.Errorf("field %q: dtype description: %w", d.Name, err)
		}
		if len(descr) != 1 || len(descr[0]) != 2 {
			return d, fmt.Errorf("field %q: structured dtype %q not supported", d.Name, args[dtypeOffset:dtypeOffset+int(n)])
		}
		d.DType = descr[0][1]
		if _, err := d.ArrayBytes(); err != nil {
			return d, err
		}
	case d.Type == Custom:
		d.Args = append([]byte(nil), args...)
	case d.Type.Targets():
		d.Args = args
		if err := d.setTarget(); err != nil {
			return d, err
		}
	case d.Type == Text:
		d.Args = args
		if err := d.setText(); err != nil {
			return d, err
		}
	case d.Type == Video:
		d.Args = args
		if err := d.videoArgs(); err != nil {
			return d, err
		}
	case d.Type == Audio:
		d.Args = args
		if err := d.audioArgs(); err != nil {
			return d, err
		}
	}
	return d, nil
}
