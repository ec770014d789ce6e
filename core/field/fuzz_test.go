package field

import (
	"slices"
	"testing"
)

// FuzzParseDesc feeds arbitrary 1041-byte descriptors to ParseDesc: it must
// return an error or a descriptor that is self-consistent (array fields have
// a computable size) and that marshals back to a descriptor parsing the same.
func FuzzParseDesc(f *testing.F) {
	for _, d := range []Desc{
		{Type: Int, Name: "label"},
		{Type: Float, Name: "x"},
		{Type: RGBImage, Name: "image"},
		{Type: Bytes, Name: "blob"},
		{Type: JSON, Name: "doc"},
		{Type: NDArray, Name: "arr", Shape: []uint64{3, 4}, DType: "<f4"},
		{Type: TorchTensor, Name: "t", Shape: []uint64{2}, DType: "|u1"},
		{Type: NDArray, Name: "cplx", Shape: []uint64{1, 1, 1}, DType: ">c16"},
		{Type: Custom, Name: "custom", Args: []byte{1, 2, 3}},
		{Type: Ragged, Name: "boxes", Target: &TargetArgs{DType: "<f4", RowShape: []uint64{4}, Follows: "image", Coords: "xyxy"}},
		{Type: Mask, Name: "mask", Target: &TargetArgs{DType: "<u2", Follows: "image", Encoding: "lz4"}},
		{Type: Text, Name: "caption", Text: &TextArgs{Tokens: true, VocabSize: 49408, SOT: ptrU32(49406), EOT: ptrU32(49407)}},
	} {
		b, err := d.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(make([]byte, DescriptorSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Give most inputs the right length so the parser itself is exercised.
		if len(b) > DescriptorSize {
			b = b[:DescriptorSize]
		} else if len(b) > 64 {
			b = append(b, make([]byte, DescriptorSize-len(b))...)
		}
		d, err := ParseDesc(b)
		if err != nil {
			return
		}
		if d.Arrays() {
			if _, err := d.ArrayBytes(); err != nil {
				t.Fatalf("parsed an array field whose size is unknown: %v", err)
			}
		}
		if d.Type != Custom {
			if _, err := ColumnOf(d.Type); err != nil {
				t.Fatalf("parsed type %v has no column", d.Type)
			}
		}
		out, err := d.MarshalBinary()
		if err != nil {
			return // e.g. a name with bytes MarshalBinary refuses
		}
		d2, err := ParseDesc(out)
		if err != nil {
			t.Fatalf("re-parsing a marshalled descriptor: %v", err)
		}
		if d2.Type != d.Type || d2.Name != d.Name || d2.DType != d.DType || !slices.Equal(d2.Shape, d.Shape) ||
			!slices.Equal(d2.Args, d.Args) {
			t.Fatalf("round trip changed %+v into %+v", d, d2)
		}
	})
}

func ptrU32(x uint32) *uint32 { return &x }
